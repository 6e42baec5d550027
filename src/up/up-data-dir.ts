/**
 * What `amesh up` keeps in its data directory, so that `amesh exec`, `amesh logs`, `amesh down` and kubectl find
 * a running (or crashed) cluster: the kubeconfig, the cluster's nodes, each pod's sandbox and container logs
 * (`pods/<ns>_<name>_<uid>/`, as kubelet's `/var/log/pods`), and the record of what was created.
 */
import { mkdir, readFile, readdir, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { MeshError } from '../lib/errors.js';
import { NodeFilesystem } from './node-filesystem.js';

/** One node as `amesh exec --node` and `amesh down` need it. */
export interface NodeRecord {
  readonly name: string;
  readonly netns: string;
  readonly ip: string;
  readonly podCidr: string;
}

export interface ClusterRecord {
  readonly name: string;
  readonly hostIp: string;
  readonly nodes: readonly NodeRecord[];
}

/** One pod's sandbox, written by the kubelet once its netns exists. */
export interface SandboxRecord {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  readonly node: string;
  readonly netns: string;
  /** The pod's IP, which a restarted kubelet takes over with the sandbox. */
  readonly ip: string;
  readonly containers: readonly string[];
}

const SANDBOX_FILE = 'sandbox.json';

/** The entries `up` makes in the data directory: teardown removes these (the directory itself only when empty). */
const ENTRIES = {
  kubeconfig: 'kubeconfig',
  apiserverDir: 'apiserver',
  journal: 'created.jsonl',
  clusterFile: 'cluster.json',
  nodesDir: 'nodes',
  runtimeDir: 'runtime',
} as const;
/** The logs: up's own and each pod's containers'. Teardown keeps them; the next `up` here starts them afresh. */
const LOGS = {
  logFile: 'up.log',
  podsDir: 'pods',
} as const;

export class UpDataDir {
  /** The admin kubeconfig (a link to the API server's). */
  readonly kubeconfig: string;
  readonly apiserverDir: string;
  readonly journal: string;
  readonly clusterFile: string;
  readonly logFile: string;
  readonly podsDir: string;
  readonly nodesDir: string;
  /** The container runtime's state and each pod's runtime files (volumes, bundles): gone with the cluster. */
  readonly runtimeDir: string;
  /** Everything `up` creates here but its logs. */
  readonly created: readonly string[];
  /** Where the logs are. */
  readonly logs: readonly string[];

  constructor(readonly root: string) {
    const at = (name: string): string => path.join(root, name);
    this.kubeconfig = at(ENTRIES.kubeconfig);
    this.apiserverDir = at(ENTRIES.apiserverDir);
    this.journal = at(ENTRIES.journal);
    this.clusterFile = at(ENTRIES.clusterFile);
    this.logFile = at(LOGS.logFile);
    this.podsDir = at(LOGS.podsDir);
    this.nodesDir = at(ENTRIES.nodesDir);
    this.runtimeDir = at(ENTRIES.runtimeDir);
    this.created = Object.values(ENTRIES).map(at);
    this.logs = Object.values(LOGS).map(at);
  }

  nodeDir(node: string): string {
    return path.join(this.nodesDir, node);
  }
  /** The directories node `node` has to itself (its /etc/cni, /opt/cni, /var/run/ztunnel…). */
  nodeFilesystem(node: string): NodeFilesystem {
    return new NodeFilesystem(path.join(this.nodeDir(node), 'root'));
  }
  /** Node `node`'s static pod manifests (kubeadm's /etc/kubernetes/manifests). */
  staticPodDir(node: string): string {
    return path.join(this.nodeDir(node), 'manifests');
  }
  podDir(namespace: string, name: string, uid: string): string {
    return path.join(this.podsDir, `${namespace}_${name}_${uid}`);
  }

  /** runc's state directory. */
  get runcRoot(): string {
    return path.join(this.runtimeDir, 'runc');
  }
  /** A pod's volumes, managed /etc files and container bundles. */
  podRuntimeDir(uid: string): string {
    return path.join(this.runtimeDir, 'pods', uid);
  }

  async writeCluster(c: ClusterRecord): Promise<void> {
    await writeFile(this.clusterFile, JSON.stringify(c, null, 2), { mode: 0o600 });
  }

  async readCluster(): Promise<ClusterRecord> {
    const text = await readFile(this.clusterFile, 'utf8').catch(() => undefined);
    if (text === undefined)
      throw new MeshError(
        'UP_ERR_NOT_FOUND',
        `no cluster in ${this.root} (start one with amesh up, or pass its --data-dir)`,
      );
    return JSON.parse(text) as ClusterRecord;
  }

  async node(name: string): Promise<NodeRecord> {
    const c = await this.readCluster();
    const n = c.nodes.find((x) => x.name === name);
    if (n === undefined)
      throw new MeshError(
        'UP_ERR_NOT_FOUND',
        `no node "${name}" in cluster ${c.name}; its nodes are ${c.nodes.map((x) => x.name).join(', ')}`,
      );
    return n;
  }

  async writeSandbox(dir: string, s: SandboxRecord): Promise<void> {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    await writeFile(path.join(dir, SANDBOX_FILE), JSON.stringify(s), { mode: 0o600 });
  }

  /**
   * The newest sandbox of pod `ns/name` (a pod recreated under the same name has a new uid and directory), kept
   * with its logs after the cluster's teardown.
   */
  async sandbox(ns: string, name: string): Promise<{ dir: string; record: SandboxRecord }> {
    const prefix = `${ns}_${name}_`;
    const found: { dir: string; record: SandboxRecord; mtime: number }[] = [];
    for (const e of await readdir(this.podsDir).catch(() => [])) {
      if (!e.startsWith(prefix)) continue;
      const dir = path.join(this.podsDir, e);
      const record = await readSandboxRecord(dir);
      if (record === undefined) continue;
      const { mtimeMs } = await stat(path.join(dir, SANDBOX_FILE));
      found.push({ dir, record, mtime: mtimeMs });
    }
    const newest = found.sort((a, b) => b.mtime - a.mtime)[0];
    if (newest !== undefined) return newest;
    await this.readCluster();
    throw new MeshError(
      'UP_ERR_NOT_FOUND',
      `pod ${ns}/${name} has no sandbox on this cluster (kubectl --kubeconfig ${this.kubeconfig} get pods -A -o wide lists the pods)`,
    );
  }
}

/** The sandbox record in pod directory `dir`, if there is one. */
export async function readSandboxRecord(dir: string): Promise<SandboxRecord | undefined> {
  const text = await readFile(path.join(dir, SANDBOX_FILE), 'utf8').catch(() => undefined);
  return text === undefined ? undefined : (JSON.parse(text) as SandboxRecord);
}
