/**
 * A node's kubelet as its own process (`amesh kubelet`), as kind runs kubelet as a systemd service of each node: it
 * reads what `amesh up` laid out for the node in the data directory (the node's record in `cluster.json`, the admin
 * kubeconfig, the CNI network configuration in the node's /etc/cni/net.d (node-filesystem.ts), the static pod manifests), starts the
 * static pods at once, registers the Node once the API answers, and runs the node's pods. A kubelet that restarts
 * takes over the sandboxes and containers of the one before (kubelet.ts, processes.ts), so its pods run on.
 * SIGTERM is the node shutting down: every pod is stopped, then the kubelet exits. With `exitWithStdin`, the end of
 * stdin (its supervisor gone) ends the kubelet at once and leaves the pods running, as a crash would.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { PooledKubeConfig } from '../kube/pooled-kube-config.js';
import { Backoff } from '../lib/backoff.js';
import { describeError } from '../lib/errors.js';
import type { LogControl } from '../lib/log.js';
import { packageRoot } from '../lib/package-root.js';
import { CniRuntime } from './cni-runtime.js';
import { Kubelet } from './kubelet.js';
import { writeImageLauncher } from './local-image.js';
import { KubeletSources } from './kubelet-sources.js';
import { ResourceJournal } from './resource-journal.js';
import { RuncRuntime } from './runc-runtime.js';
import { UpDataDir } from './up-data-dir.js';

/** Where the host's CNI plugins are: Debian's containernetworking-plugins and the upstream tarball's. */
export const CNI_PLUGIN_DIRS = ['/usr/lib/cni', '/opt/cni/bin'] as const;
/** The node's /etc/cni/net.d. */
const nodeCniConfDir = (dataDir: UpDataDir, node: string): string =>
  dataDir.nodeFilesystem(node).hostPath('/etc/cni/net.d');
/** The node's CNI network configuration list, the first in its /etc/cni/net.d. */
export const nodeNetworkConfigFile = (dataDir: UpDataDir, node: string): string =>
  path.join(nodeCniConfDir(dataDir, node), '10-amesh.conflist');

const REGISTER_RETRY_INITIAL_MS = 250;
const REGISTER_RETRY_MAX_MS = 5_000;

export interface KubeletProcessOptions {
  readonly dataDir: string;
  readonly node: string;
  /** kubelet's --pod-manifest-path. */
  readonly podManifestPath?: string;
  readonly exitWithStdin: boolean;
}

export async function runKubeletProcess(o: KubeletProcessOptions, logs: LogControl): Promise<void> {
  const dataDir = new UpDataDir(o.dataDir);
  const cluster = await dataDir.readCluster();
  const node = await dataDir.node(o.node);
  const kc = new PooledKubeConfig();
  kc.loadFromFile(dataDir.kubeconfig);
  const nodeFs = dataDir.nodeFilesystem(node.name);
  const imageLauncher = path.join(dataDir.nodeDir(node.name), 'amesh-image-launcher');
  await writeImageLauncher(imageLauncher);
  const log = logs.scope(`kubelet.${node.name}`);
  const sources = new KubeletSources(kc, log);
  const kubelet = new Kubelet({
    kc,
    cluster: cluster.name,
    node,
    nodeNetnsPath: `/run/netns/${node.netns}`,
    dataDir,
    journal: ResourceJournal.attach(dataDir.journal),
    cniConfDir: nodeCniConfDir(dataDir, node.name),
    hostPath: (p) => nodeFs.hostPath(p),
    imageLauncher,
    cni: new CniRuntime({
      pluginDirs: [nodeFs.hostPath('/opt/cni/bin'), ...CNI_PLUGIN_DIRS, path.join(packageRoot(), 'bin')],
      cacheDir: path.join(dataDir.nodeDir(node.name), 'cni', 'cache'),
      inNetns: `/run/netns/${node.netns}`,
    }),
    sources,
    runtime: new RuncRuntime(dataDir.runcRoot, cluster.name),
    nodeResolvConf: await readFile('/etc/resolv.conf', 'utf8').catch(() => ''),
    ...(o.podManifestPath === undefined ? {} : { staticPodPath: o.podManifestPath }),
    log,
  });
  let stopping = false;
  const shutdown = (): void => {
    if (stopping) return;
    stopping = true;
    log.info('node shutting down: stopping its pods');
    void (async () => {
      await kubelet.stop();
      await kubelet.stopStaticPods();
      await sources.stop();
      process.exit(0);
    })();
  };
  process.once('SIGTERM', shutdown);
  process.once('SIGINT', shutdown);
  if (o.exitWithStdin) {
    process.stdin.on('end', () => process.exit(0));
    process.stdin.resume();
  }
  await kubelet.startStaticPods();
  const retry = new Backoff(REGISTER_RETRY_INITIAL_MS, REGISTER_RETRY_MAX_MS);
  for (;;) {
    if (stopping) return;
    try {
      await kubelet.register();
      break;
    } catch (e) {
      log.debug({ error: describeError(e) }, 'cannot register the node yet');
      await new Promise((r) => setTimeout(r, retry.next()));
    }
  }
  sources.start();
  await sources.synced;
  kubelet.start();
  await kubelet.synced;
  log.info({ node: node.name }, 'kubelet running');
}
