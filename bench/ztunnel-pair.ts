/**
 * Two `amesh ztunnel` processes as two nodes would run them (LOCAL_XDS_PATH and a plug-in CA): the first on the
 * client workload's node, the second on the app's. In local mode (the bench's SOCKS5 path, `amesh`) they serve the
 * workloads' loopback IPs, SOCKS5 on 15080 and HBONE on 15008. In in-pod mode (`pod-capture`, bench/capture-bench.ts)
 * each connects to its own node agent's ZDS socket and serves the pod that agent hands it, inside the pod's network
 * namespace. Either way one connection crosses both processes, so each end has its own process, as between nodes.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ameshCommand } from '../src/up/amesh-command.js';
import { DATA_PATH_NODE_FLAGS } from '../src/lib/node-flags.js';

export interface ZtunnelPairOptions {
  /** Names the mesh file and the two nodes (`<name>1`, `<name>2`). */
  readonly name: string;
  readonly dir: string;
  /** The plug-in CA directory both issue certificates from. */
  readonly ca: string;
  readonly clientIp: string;
  readonly appIp: string;
  /** Admin, metrics and readiness addresses of the client's ztunnel and the app's. */
  readonly controlIps: readonly [string, string];
  /** Node flags instead of the data-path flags. */
  readonly nodeFlags?: readonly string[];
  /** RLIMIT_NOFILE for both processes (set through prlimit, which needs root to raise the hard limit). */
  readonly nofile?: number;
  /**
   * In-pod mode: the ZDS sockets of the client's node agent and the app's. Their snapshots name the pods as the mesh
   * file does (namespace `bench`, names and service accounts `client` and `app`).
   */
  readonly inpodSockets?: readonly [string, string];
}

/** In-pod mode is ready only once the node agent's snapshot is in and its pod is served: allow up to 20 s. */
const READY_POLLS = 400;
const READY_POLL_MS = 50;

/**
 * `BENCH_CPU_PROF=<dir>`: the proxies run under `--cpu-prof` and write their profiles there when they exit
 * (`--cpu-prof` is not allowed in NODE_OPTIONS, so the bench passes it).
 */
export function profileFlags(): string[] {
  const dir = process.env['BENCH_CPU_PROF'];
  return dir === undefined || dir === '' ? [] : ['--cpu-prof', `--cpu-prof-dir=${dir}`];
}

/** Starts the pair and resolves once both answer ready. */
export async function startZtunnelPair(o: ZtunnelPairOptions): Promise<ChildProcess[]> {
  const mesh = path.join(o.dir, `${o.name}-mesh.yaml`);
  await writeFile(
    mesh,
    `workloads:
- {uid: ${o.name}-client, name: client, namespace: bench, serviceAccount: client, workloadIps: [${o.clientIp}], protocol: HBONE, node: ${o.name}1}
- {uid: ${o.name}-app, name: app, namespace: bench, serviceAccount: app, workloadIps: [${o.appIp}], protocol: HBONE, node: ${o.name}2}
`,
  );
  const { cmd, args } = ameshCommand();
  const script =
    o.nodeFlags === undefined ? args : [...o.nodeFlags, ...args.filter((a) => !DATA_PATH_NODE_FLAGS.includes(a))];
  const procs = o.controlIps.map((ip, i) => {
    const argv = [
      ...profileFlags(),
      ...script,
      'ztunnel',
      '--local-ca',
      o.ca,
      '--admin-address',
      `${ip}:15000`,
      '--metrics-address',
      `${ip}:15020`,
      '--readiness-address',
      `${ip}:15021`,
    ];
    const [file, ...rest] =
      o.nofile === undefined
        ? [cmd, ...argv]
        : ['prlimit', `--nofile=${String(o.nofile)}:${String(o.nofile)}`, cmd, ...argv];
    const mode =
      o.inpodSockets === undefined
        ? { UNSTABLE_ENABLE_SOCKS5: 'true' }
        : { UNSTABLE_ENABLE_SOCKS5: 'false', INPOD_ENABLED: 'true', INPOD_UDS: o.inpodSockets[i]! };
    return spawn(file, rest, {
      env: {
        ...process.env,
        LOCAL_XDS_PATH: mesh,
        NODE_NAME: `${o.name}${String(i + 1)}`,
        RUST_LOG: 'info',
        LOG_FORMAT: 'json',
        ...mode,
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
  });
  const stop = (): void => {
    for (const p of procs) p.kill('SIGTERM');
  };
  for (const [n, ip] of o.controlIps.entries()) {
    for (let i = 0; ; i++) {
      if (procs[n]!.exitCode !== null) {
        stop();
        throw new Error(`ztunnel on ${ip} exited (${String(procs[n]!.exitCode)}) before it was ready`);
      }
      const ok = await fetch(`http://${ip}:15021/healthz/ready`).then(
        (r) => r.status === 200,
        () => false,
      );
      if (ok) break;
      if (i > READY_POLLS) {
        stop();
        throw new Error(`ztunnel on ${ip} did not become ready`);
      }
      await new Promise((r) => setTimeout(r, READY_POLL_MS));
    }
  }
  return procs;
}
