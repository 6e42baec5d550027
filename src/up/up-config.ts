import path from 'node:path';
import { MeshError } from '../lib/errors.js';
import { LogControl } from '../lib/log.js';
import { parseCidr } from '../lib/ip.js';
import type { OutputFormat } from '../lib/table.js';

/** `amesh up` defaults. */
export const UP_DEFAULTS = Object.freeze({
  /** The demo mesh the README walks through. */
  configDir: 'examples/mesh',
  /** Two nodes: the least that shows cross-node traffic through two ztunnels. */
  nodes: 2,
  /** Beside `.amesh/istiod` and `.amesh/apiserver`, the other commands' state dirs. */
  dataDir: '.amesh/up',
  /** Names the node namespaces, the host bridge and its veths (kind's default cluster is `kind`). */
  name: 'amesh',
  /**
   * The nodes' own network (kind's node containers sit on docker's bridge): a private /24 outside docker's and
   * podman's default pools (172.17-31.x, 10.88.x), the pod CIDR and the service CIDR. The host end of the bridge
   * takes the first address; node i takes the (i+1)th.
   */
  nodeCidr: '10.240.0.0/24',
  /** kind's default podSubnet; node i gets the i-th /24 of it, as kube-controller-manager's --node-cidr-mask-size 24 does. */
  clusterCidr: '10.244.0.0/16',
  /**
   * What runs on each node besides the pods: `ambient` (the node agent and ztunnel, as Istio's DaemonSets, and
   * amesh-cni in the pod network chain: pods of enrolled namespaces are captured), or `none` (every pod unmeshed).
   */
  dataplane: 'ambient',
  /** How long `up` waits for the pods to be ready before it shows the table anyway (kind's --wait, in seconds). */
  waitSeconds: 120,
  /** Nodes get one /24 each from the cluster CIDR, so at most 256; and link names stay short. */
  maxNodes: 64,
});

/** Interface names are at most 15 bytes (IFNAMSIZ); the longest we derive is `<name>-v64` and `<name>-br`. */
const NAME_PATTERN = /^[a-z]([a-z0-9]{0,9})$/;

export interface UpConfig {
  readonly name: string;
  readonly nodes: number;
  readonly configDir: string;
  readonly dataDir: string;
  /** The host end's address (the API server, istiod) and the nodes' addresses, all in `nodeCidr`. */
  readonly hostIp: string;
  readonly nodeCidr: string;
  readonly clusterCidr: string;
  /** The addresses LoadBalancer Services get (MetalLB's address pool), on the node network. */
  readonly lbPool: { readonly first: string; readonly last: string };
  readonly dataplane: Dataplane;
  readonly waitSeconds: number;
  readonly output: OutputFormat;
  readonly logLevel: string;
}

export type Dataplane = 'none' | 'ambient';

export interface UpFlags {
  configDir?: string | undefined;
  nodes?: string | undefined;
  dataDir?: string | undefined;
  name?: string | undefined;
  nodeCidr?: string | undefined;
  lbPool?: string | undefined;
  dataplane?: string | undefined;
  wait?: string | undefined;
  output?: string | undefined;
  logLevel?: string | undefined;
}

const ipv4Number = (ip: string): number | undefined => {
  const c = parseCidr(`${ip}/32`);
  return c === undefined || c.bytes.length !== 4 ? undefined : c.bytes.readUInt32BE(0);
};

/**
 * `--lb-pool FIRST-LAST`: a range inside the node network above the nodes' addresses, or by default the upper half
 * of the node network (as a kind cluster's MetalLB pool takes the top of docker's network).
 */
function lbPool(text: string | undefined, nodeCidr: string, nodes: number): { first: string; last: string } {
  const size = 2 ** (32 - Number(nodeCidr.split('/')[1]));
  const base = ipv4Number(addressInCidr(nodeCidr, 0))!;
  if (text === undefined) return { first: addressInCidr(nodeCidr, size / 2), last: addressInCidr(nodeCidr, size - 2) };
  const [first = '', last = '', extra] = text.split('-');
  const a = ipv4Number(first);
  const b = ipv4Number(last);
  const lowest = base + nodes + 2;
  if (extra !== undefined || a === undefined || b === undefined || a > b || a < lowest || b > base + size - 2)
    throw new MeshError(
      'AMESH_ERR_CONFIG',
      `--lb-pool: "${text}" must be FIRST-LAST, IPv4 addresses of the node network ${nodeCidr} above the nodes' (from ${addressInCidr(nodeCidr, nodes + 2)}) and below its broadcast address`,
    );
  return { first, last };
}

/** The IPv4 address `n` places after the network address of `cidr`. */
export function addressInCidr(cidr: string, n: number): string {
  const c = parseCidr(cidr)!;
  const v = (c.bytes.readUInt32BE(0) + n) >>> 0;
  return [v >>> 24, (v >>> 16) & 0xff, (v >>> 8) & 0xff, v & 0xff].join('.');
}

function ipv4Cidr(text: string, flag: string, maxPrefix: number): string {
  const c = parseCidr(text);
  if (c === undefined || c.bytes.length !== 4 || !text.includes('/') || c.prefix > maxPrefix)
    throw new MeshError(
      'AMESH_ERR_CONFIG',
      `${flag}: "${text}" is not an IPv4 CIDR of /${String(maxPrefix)} or larger`,
    );
  return text;
}

export function loadUpConfig(flags: UpFlags, env: NodeJS.ProcessEnv = process.env): UpConfig {
  const name = flags.name ?? UP_DEFAULTS.name;
  if (!NAME_PATTERN.test(name))
    throw new MeshError(
      'AMESH_ERR_CONFIG',
      `--name: "${name}" must be 1 to 10 lowercase letters and digits, starting with a letter (it names network namespaces and interfaces, which are at most 15 bytes)`,
    );
  const nodes = Number(flags.nodes ?? UP_DEFAULTS.nodes);
  if (!Number.isInteger(nodes) || nodes < 1 || nodes > UP_DEFAULTS.maxNodes)
    throw new MeshError(
      'AMESH_ERR_CONFIG',
      `--nodes: "${flags.nodes ?? ''}" must be a whole number from 1 to ${String(UP_DEFAULTS.maxNodes)}`,
    );
  const nodeCidr = ipv4Cidr(flags.nodeCidr ?? UP_DEFAULTS.nodeCidr, '--node-cidr', 30);
  if (2 ** (32 - Number(nodeCidr.split('/')[1])) < nodes + 3)
    throw new MeshError(
      'AMESH_ERR_CONFIG',
      `--node-cidr: ${nodeCidr} has no room for the host and ${String(nodes)} nodes`,
    );
  const dataplane = flags.dataplane ?? UP_DEFAULTS.dataplane;
  if (dataplane !== 'none' && dataplane !== 'ambient')
    throw new MeshError('AMESH_ERR_CONFIG', `--dataplane: "${dataplane}" must be none or ambient`);
  const waitSeconds = Number(flags.wait ?? UP_DEFAULTS.waitSeconds);
  if (!Number.isInteger(waitSeconds) || waitSeconds < 0)
    throw new MeshError('AMESH_ERR_CONFIG', `--wait: "${flags.wait ?? ''}" must be a whole number of seconds`);
  const output = flags.output ?? 'table';
  if (output !== 'table' && output !== 'json' && output !== 'yaml')
    throw new MeshError('AMESH_ERR_CONFIG', `-o: "${output}" must be json or yaml (or left out for the table)`);
  const logLevel = flags.logLevel ?? env['LOG_LEVEL'] ?? 'info';
  LogControl.parseSpec(logLevel);
  return Object.freeze({
    name,
    nodes,
    configDir: path.resolve(flags.configDir ?? UP_DEFAULTS.configDir),
    dataDir: path.resolve(flags.dataDir ?? UP_DEFAULTS.dataDir),
    hostIp: addressInCidr(nodeCidr, 1),
    nodeCidr,
    clusterCidr: UP_DEFAULTS.clusterCidr,
    lbPool: lbPool(flags.lbPool, nodeCidr, nodes),
    dataplane,
    waitSeconds,
    output,
    logLevel,
  });
}
