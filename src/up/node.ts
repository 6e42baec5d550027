/**
 * One node of the local cluster, as kind's node containers are: its own network namespace
 * (`<cluster>-<node>`), wired to the namespace `amesh up` runs in (the host) by a veth whose host end joins the
 * cluster bridge, with the node's address, a default route to the host (where the API server and istiod listen)
 * and a route to every other node's pod CIDR through that node, as kindnet installs them. The node forwards, so
 * its pods (on its own `cni0` bridge, made by the CNI chain) reach the other nodes' pods.
 */
import { MeshError } from '../lib/errors.js';
import { addressInCidr, type UpConfig } from './up-config.js';
import type { NodeRecord } from './up-data-dir.js';
import { deleteLink, deleteNetns, type ResourceJournal } from './resource-journal.js';
import { ip, runCommand } from './run-command.js';

/** The i-th node (1-based): its name, namespace, address on the node network, and pod CIDR. */
export function nodeRecord(cfg: UpConfig, i: number): NodeRecord {
  const name = `node${String(i)}`;
  const [a, b] = cfg.clusterCidr.split('.');
  return {
    name,
    netns: `${cfg.name}-${name}`,
    ip: addressInCidr(cfg.nodeCidr, 1 + i),
    podCidr: `${a ?? ''}.${b ?? ''}.${String(i - 1)}.0/24`,
  };
}

/** The bridge in the host namespace that every node's veth joins. */
export const hostBridgeName = (cfg: UpConfig): string => `${cfg.name}-br`;

/** Creates the cluster bridge in the host namespace, holding the host's address on the node network. */
export async function createHostBridge(cfg: UpConfig, journal: ResourceJournal): Promise<void> {
  const br = hostBridgeName(cfg);
  await journal.create({ t: 'link', name: br }, () => ip('link', 'add', br, 'type', 'bridge'));
  await ip('addr', 'add', `${cfg.hostIp}/${cfg.nodeCidr.split('/')[1] ?? ''}`, 'dev', br);
  await ip('link', 'set', br, 'up');
}

export class UpNode {
  private constructor(
    readonly record: NodeRecord,
    private readonly hostLink: string,
  ) {}

  get name(): string {
    return this.record.name;
  }
  /** The node namespace's path, for nsenter and setns. */
  get netnsPath(): string {
    return `/run/netns/${this.record.netns}`;
  }

  /** Makes node `i` of `cfg`: its namespace, veth, address and routes (to the host and to `others`' pods). */
  static async create(
    cfg: UpConfig,
    i: number,
    others: readonly NodeRecord[],
    journal: ResourceJournal,
  ): Promise<UpNode> {
    const r = nodeRecord(cfg, i);
    const hostLink = `${cfg.name}-v${String(i)}`;
    await journal.create({ t: 'netns', name: r.netns }, () => ip('netns', 'add', r.netns));
    await ip('-n', r.netns, 'link', 'set', 'lo', 'up');
    await journal.create({ t: 'link', name: hostLink }, () =>
      ip('link', 'add', hostLink, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', r.netns),
    );
    await ip('link', 'set', hostLink, 'master', hostBridgeName(cfg), 'up');
    await ip('-n', r.netns, 'addr', 'add', `${r.ip}/${cfg.nodeCidr.split('/')[1] ?? ''}`, 'dev', 'eth0');
    await ip('-n', r.netns, 'link', 'set', 'eth0', 'up');
    await ip('-n', r.netns, 'route', 'add', 'default', 'via', cfg.hostIp);
    for (const o of others) if (o.name !== r.name) await ip('-n', r.netns, 'route', 'add', o.podCidr, 'via', o.ip);
    // The host reaches pods too (kubectl port-forward's job on a cluster; here, curl from the host).
    await ip('route', 'add', r.podCidr, 'via', r.ip);
    const fwd = await runCommand('ip', [
      'netns',
      'exec',
      r.netns,
      'sh',
      '-c',
      'echo 1 > /proc/sys/net/ipv4/ip_forward',
    ]);
    if (fwd.code !== 0)
      throw new MeshError('UP_ERR_NETWORK', `cannot turn on IP forwarding in ${r.netns}: ${fwd.stderr.trim()}`);
    return new UpNode(r, hostLink);
  }

  /** Removes the namespace (killing what runs in it) and the host end of the veth. */
  async remove(): Promise<void> {
    await deleteNetns(this.record.netns);
    await deleteLink(this.hostLink);
  }
}
