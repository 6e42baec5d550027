/**
 * `amesh up` run as a user runs it, inside a throwaway network namespace standing in for the host (entered with
 * `nsenter --net`, so the namespaces `up` mounts are visible to `amesh exec` as on a host).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { ameshCommand } from '../../src/up/amesh-command.js';
import { runToExit } from './run-to-exit.js';
import { kubectlSkip } from './kubectl.js';
import { netnsSkip, type TestNetns } from './netns.js';

/** Why `amesh up` tests cannot run here (not root, no CNI plugins, no kubectl), or false. */
export const upSkip =
  netnsSkip() ||
  (!existsSync('/usr/lib/cni/bridge') &&
    'no /usr/lib/cni/bridge: apt-get install containernetworking-plugins (.ci/run does)') ||
  kubectlSkip;

/**
 * Starting a cluster runs the API server, istiod, controllers and a CNI chain per pod: seconds on an idle machine,
 * minutes while other test files load its cores. It only bounds a failure.
 */
export const UP_DEADLINE_MS = 240_000;

export interface UpTable {
  nodes: { name: string; status: string; internalIP: string; podCIDR: string }[];
  pods: {
    namespace: string;
    name: string;
    ready: string;
    status: string;
    restarts: number;
    ip: string;
    node: string;
  }[];
}

export type RunResult = Awaited<ReturnType<typeof runToExit>>;

/** `amesh` run in the host namespace. */
export function amesh(host: TestNetns, ...args: string[]): Promise<RunResult> {
  const { cmd, args: pre } = ameshCommand();
  return runToExit('nsenter', [`--net=${host.path}`, '--', cmd, ...pre, ...args], 60_000);
}

/** `kubectl` in the host namespace with the data dir's kubeconfig. */
export function kubectlIn(host: TestNetns, dataDir: string, ...args: string[]): Promise<RunResult> {
  return kubectlWith(host, path.join(dataDir, 'kubeconfig'), ...args);
}

/** `kubectl` in the host namespace with another kubeconfig (a daemon's own credentials). */
export function kubectlWith(host: TestNetns, kubeconfig: string, ...args: string[]): Promise<RunResult> {
  return runToExit('nsenter', [`--net=${host.path}`, '--', 'kubectl', '--kubeconfig', kubeconfig, ...args], 30_000);
}

/**
 * Kills a container of the cluster with SIGKILL, as a crash would: `containerId` is its status's `amesh://<id>`,
 * the id its runc knows it by.
 */
export function killContainer(host: TestNetns, dataDir: string, containerId: string): Promise<RunResult> {
  const id = containerId.replace('amesh://', '');
  return runToExit(
    'nsenter',
    [`--net=${host.path}`, '--', 'runc', '--root', path.join(dataDir, 'runtime', 'runc'), 'kill', id, 'KILL'],
    10_000,
  );
}

/** A command in the network namespace of the pod with `uid` of `cluster`, from the node, as `nsenter --net` on it. */
export function inPodNetns(cluster: string, uid: string, cmd: string, ...args: string[]): Promise<RunResult> {
  return runToExit('ip', ['netns', 'exec', `${cluster}-pod-${uid}`, cmd, ...args], 10_000);
}

export interface LaunchedUp {
  readonly up: ChildProcess;
  /** Resolves with the table once `up` says the cluster is up. */
  readonly ready: Promise<UpTable>;
  stderr(): string;
}

/** Starts `amesh up` in the host namespace (the caller owns the process from here on, even if it never comes up). */
export function launchUp(host: TestNetns, args: string[]): LaunchedUp {
  const { cmd, args: pre } = ameshCommand();
  const up = spawn('nsenter', [`--net=${host.path}`, '--', cmd, ...pre, 'up', '-o', 'json', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  up.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const ready = new Promise<UpTable>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`amesh up did not come up:\n${err}`)), UP_DEADLINE_MS);
    up.stderr.on('data', (d: Buffer) => {
      err += d.toString();
      if (/Cluster \S+ is up/.test(err)) {
        clearTimeout(timer);
        resolve(JSON.parse(out) as UpTable);
      }
    });
    up.once('exit', (code) => reject(new Error(`amesh up exited with ${String(code)}:\n${err}`)));
  });
  return { up, ready, stderr: () => err };
}

/**
 * A test's last word on its cluster, whatever happened to it: `up` killed if it still runs, then `amesh down` if
 * `up` did not remove all it made (killed, or dead half way through its teardown).
 */
export async function removeCluster(launched: LaunchedUp | undefined, host: TestNetns, dataDir: string): Promise<void> {
  if (launched?.up.exitCode === null && launched.up.signalCode === null) {
    launched.up.kill('SIGKILL');
    await once(launched.up, 'exit');
  }
  if (existsSync(path.join(dataDir, 'created.jsonl'))) await amesh(host, 'down', '--data-dir', dataDir);
}

/** What must be the same before `up` and after its teardown, in the host namespace and on the machine. */
export interface HostState {
  links: string;
  routes: string;
  iptables: string;
  ipsets: string;
  netns: string;
  processes: string;
}

export async function hostState(host: TestNetns, cluster: string, marker: string): Promise<HostState> {
  const run = async (cmd: string, ...args: string[]): Promise<string> =>
    (await runToExit('ip', ['netns', 'exec', host.name, cmd, ...args], 10_000)).stdout;
  const netns = (await runToExit('ip', ['netns', 'list'], 10_000)).stdout;
  const procs = (await runToExit('ps', ['-e', '-o', 'pid=,args='], 10_000)).stdout;
  // The cluster's containers are in its cgroup whatever they run; anything else of it names the marker.
  const inCluster = (pid: string): boolean => {
    try {
      return readFileSync(`/proc/${pid}/cgroup`, 'utf8').includes(`/amesh-${cluster}/`);
    } catch {
      return false;
    }
  };
  return {
    links: await run('ip', '-o', 'link'),
    routes: await run('ip', 'route'),
    iptables: (await run('iptables-save'))
      .split('\n')
      .filter((l) => !l.startsWith('#'))
      .map((l) => l.replace(/\[\d+:\d+\]/g, ''))
      .join('\n'),
    ipsets: await run('ipset', 'list'),
    netns: netns
      .split('\n')
      .filter((l) => l.startsWith(`${cluster}-`))
      .join('\n'),
    processes: procs
      .split('\n')
      .map((l) => /^\s*(\d+) (.*)$/.exec(l))
      .filter((m): m is RegExpExecArray => m !== null && (m[2]!.includes(marker) || inCluster(m[1]!)))
      .map((m) => m[2])
      .join('\n'),
  };
}

/**
 * Stops `up` with `signal` and asserts it exits 0 leaving the host as `clean` and only the logs in the data dir. With `closeOutput`
 * its stdout and stderr are closed first, as a `| tee` ended by the same Ctrl-C, or a closed terminal, leaves them.
 */
export async function assertTornDown(
  launched: LaunchedUp,
  host: TestNetns,
  cluster: string,
  marker: string,
  clean: HostState,
  dataDir: string,
  stopWith: { signal: NodeJS.Signals; closeOutput: boolean } = { signal: 'SIGTERM', closeOutput: false },
): Promise<void> {
  if (stopWith.closeOutput) {
    launched.up.stdout?.destroy();
    launched.up.stderr?.destroy();
  }
  launched.up.kill(stopWith.signal);
  const [code] = (await once(launched.up, 'exit')) as [number | null];
  assert.equal(code, 0, launched.stderr());
  assert.deepEqual(await hostState(host, cluster, marker), clean);
  assert.deepEqual(readdirSync(dataDir).sort(), ['pods', 'up.log'], 'only the logs are kept');
}
