import { Command } from '@commander-js/extra-typings';
import { ameshInvocation } from '../up/amesh-invocation.js';
import { Cluster, logsKept } from '../up/cluster.js';
import { releaseEndedClaims } from '../up/cluster-claim.js';
import { clusterTable } from '../up/cluster-table.js';
import { requireRoot } from '../up/require-root.js';
import { removeRecorded } from '../up/resource-journal.js';
import { loadUpConfig, UP_DEFAULTS } from '../up/up-config.js';
import { UpDataDir } from '../up/up-data-dir.js';
import { rm, rmdir } from 'node:fs/promises';
import path from 'node:path';
import { keepRunningWithoutConsole } from '../lib/console-output.js';
import { onStopSignal } from '../lib/stop-signals.js';
import { fatal } from './fatal.js';

const progress = (line: string): void => void process.stderr.write(`${line}\n`);

/**
 * `amesh up`: a local multi-node ambient cluster (src/up/cluster.ts) until Ctrl-C, SIGTERM or SIGHUP, which tear it
 * all down, to the end even when stdout and stderr are gone. Progress goes to stderr, the table of nodes and pods to
 * stdout.
 */
export function upCommand(): Command {
  return new Command('up')
    .description(
      "bring up a local cluster: an API server and N nodes (network namespaces), Istio's ambient mesh installed on it, running the manifests' pods; Ctrl-C tears it down",
    )
    .option(
      '--config-dir <dir>',
      'Kubernetes manifests to apply (kubectl apply --prune), followed as they change',
      UP_DEFAULTS.configDir,
    )
    .option('--nodes <n>', 'how many nodes', String(UP_DEFAULTS.nodes))
    .option(
      '--data-dir <dir>',
      'the kubeconfig, pod logs, component logs (up.log) and the record amesh down uses',
      UP_DEFAULTS.dataDir,
    )
    .option('--name <name>', 'cluster name: prefixes the network namespaces and links', UP_DEFAULTS.name)
    .option('--node-cidr <cidr>', 'the node network (the host takes its first address)', UP_DEFAULTS.nodeCidr)
    .option(
      '--lb-pool <first-last>',
      "addresses for LoadBalancer Services, in the node network above the nodes' (default: its upper half)",
    )
    .option(
      '--dataplane <mode>',
      "ambient: Istio installed on the new cluster as amesh install --set profile=ambient does (istiod, and istio-cni's node agent and ztunnel on every node); none: the bare cluster, as kind's",
      UP_DEFAULTS.dataplane,
    )
    .option(
      '--wait <seconds>',
      'how long to wait for the pods to be ready before showing the table anyway',
      String(UP_DEFAULTS.waitSeconds),
    )
    .option('-o, --output <format>', 'json or yaml instead of the table')
    .option('--log-level <level>', 'log level of up.log, or scope=level list')
    .action(async (o) => {
      keepRunningWithoutConsole();
      let cluster: Cluster | undefined;
      let signalled = false;
      const stop = (): void => {
        signalled = true;
        if (cluster === undefined) return;
        void cluster.stop().then(
          () => process.exit(0),
          (e: unknown) => fatal(e),
        );
      };
      onStopSignal(stop);
      try {
        const cfg = loadUpConfig(o);
        cluster = await Cluster.start(cfg, progress);
        if (signalled) return stop();
        progress('Waiting for the pods');
        const settled = await cluster.settle();
        if (signalled) return;
        if (!settled) progress('Not every pod is ready yet; the table shows where they are');
        process.stdout.write(clusterTable(await cluster.snapshot(), cfg.output));
        progress(
          `Cluster ${cfg.name} is up. kubectl --kubeconfig ${cluster.dataDir.kubeconfig} get pods -A -o wide; ${ameshInvocation()} exec --data-dir ${cluster.dataDir.root} NS/POD -- CMD; Ctrl-C tears it down`,
        );
      } catch (e) {
        fatal(e);
      }
    });
}

/** `amesh down`: removes what an `amesh up` with this data dir left (stopping it first if it still runs). */
export function downCommand(): Command {
  return new Command('down')
    .description(
      'remove everything an amesh up left behind (network namespaces, links, processes), stopping it first if it runs',
    )
    .option('--data-dir <dir>', 'the data dir amesh up used', UP_DEFAULTS.dataDir)
    .action(async (o) => {
      keepRunningWithoutConsole();
      try {
        requireRoot('amesh down');
        const dataDir = new UpDataDir(path.resolve(o.dataDir));
        const removed = await removeRecorded(dataDir.journal);
        await releaseEndedClaims(dataDir.root);
        for (const p of dataDir.created) await rm(p, { recursive: true, force: true });
        await rmdir(dataDir.root).catch(() => undefined);
        for (const r of removed) progress(`Removed ${r}`);
        progress(
          removed.length === 0
            ? `Nothing left to remove in ${dataDir.root}`
            : `Removed ${String(removed.length)} things amesh up left`,
        );
        progress(logsKept(dataDir));
      } catch (e) {
        fatal(e);
      }
    });
}
