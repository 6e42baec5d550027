/**
 * The capture section of `npm run bench`: the paths between two pod network namespaces on one veth link.
 * `pod-direct`: neither pod enrolled, the client in pod A dials pod B's IP. `pod-capture`: both pods enrolled with
 * Istio's in-pod rules and served by one ztunnel in in-pod mode (INPOD_ENABLED), which gets both pods' namespaces
 * from the node agent's ZDS server; the same unchanged client is captured on 15001 and carried over HBONE to
 * B:15008. hbone-bench.ts measures them beside its loopback paths, with the client inside pod A (nsenter).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pino } from 'pino';
import { ZtunnelServer } from '../src/cni/agent/ztunnel-server.js';
import type { SnapshotPod } from '../src/cni/agent/ztunnel-link.js';
import { ameshCommand } from '../src/demo/ztunnel-process.js';
import { podPair, type PodPair } from '../test/helpers/pod-pair.js';

/** The capture paths `BENCH_PATHS` can name. */
export const CAPTURE_PATHS = ['pod-direct', 'pod-capture'] as const;
export type CapturePath = (typeof CAPTURE_PATHS)[number];

/** Where a capture path's measuring child runs (pod A) and where its app listens (pod B). */
export interface PodTarget {
  readonly clientNetns: string;
  readonly serverNetns: string;
  readonly serverIp: string;
  /** The proxies on the path (the in-pod ztunnel), for CPU and RSS. */
  readonly pids: number[];
}

export interface CapturePaths {
  readonly targets: Partial<Record<CapturePath, PodTarget>>;
  stop(): Promise<void>;
}

const NODE = 'bench-node';
/** One pair per path, so both exist at once and rounds interleave; the subnets live only inside the pods. */
const SUBNETS: Record<CapturePath, string> = { 'pod-direct': '10.99.1', 'pod-capture': '10.99.2' };
/** The in-pod ztunnel's admin, metrics and readiness listen on the host, in this helper's loopback range. */
const ZTUNNEL_HOST = '127.0.99.1';
const READY_POLLS = 400;
const READY_POLL_MS = 50;

/** Builds the pods for the paths in `wanted`; for `pod-capture`, starts the ZDS server and the in-pod ztunnel. */
export async function startCapturePaths(dir: string, ca: string, wanted: readonly CapturePath[]): Promise<CapturePaths> {
  const pairs: PodPair[] = [];
  const fds: number[] = [];
  let ztunnel: ChildProcess | undefined;
  let zds: ZtunnelServer | undefined;
  const stop = async (): Promise<void> => {
    if (ztunnel !== undefined && ztunnel.exitCode === null) {
      const exited = new Promise((r) => ztunnel!.once('exit', r));
      ztunnel.kill('SIGTERM');
      await exited;
    }
    zds?.close();
    for (const fd of fds.splice(0)) closeSync(fd);
    for (const p of pairs.splice(0)) await p.remove();
  };
  try {
    const targets: Partial<Record<CapturePath, PodTarget>> = {};
    for (const name of wanted) {
      const [clientIp, serverIp] = [`${SUBNETS[name]}.1`, `${SUBNETS[name]}.2`];
      const pods = await podPair(clientIp, serverIp, name === 'pod-capture');
      pairs.push(pods);
      const target = { clientNetns: pods.client.path, serverNetns: pods.server.path, serverIp, pids: [] as number[] };
      if (name === 'pod-capture') {
        const socket = path.join(dir, 'ztunnel.sock');
        const snapshot: SnapshotPod[] = [
          { uid: 'bench-pod-client', info: { name: 'client-0', namespace: 'bench', serviceAccount: 'client' }, netns: openSync(pods.client.path, 'r') },
          { uid: 'bench-pod-app', info: { name: 'app-0', namespace: 'bench', serviceAccount: 'app' }, netns: openSync(pods.server.path, 'r') },
        ];
        fds.push(...snapshot.map((p) => p.netns!));
        zds = new ZtunnelServer(socket, () => snapshot, pino({ level: 'silent' }));
        zds.listen();
        ztunnel = await startInpodZtunnel(dir, ca, socket, clientIp, serverIp);
        target.pids.push(ztunnel.pid!);
      }
      targets[name] = target;
    }
    return { targets, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}

/**
 * `BENCH_CPU_PROF=<dir>`: the proxies run under `--cpu-prof` and write their profiles there when they exit
 * (`--cpu-prof` is not allowed in NODE_OPTIONS, so the bench passes it).
 */
export function profileFlags(): string[] {
  const dir = process.env['BENCH_CPU_PROF'];
  return dir === undefined || dir === '' ? [] : ['--cpu-prof', `--cpu-prof-dir=${dir}`];
}

/** One ztunnel in in-pod mode for both pods; ready once the ZDS snapshot is in and both pods are served. */
async function startInpodZtunnel(dir: string, ca: string, socket: string, clientIp: string, serverIp: string): Promise<ChildProcess> {
  const mesh = path.join(dir, 'inpod-mesh.yaml');
  await writeFile(mesh, `workloads:
- {uid: Kubernetes//Pod/bench/client-0, name: client-0, namespace: bench, serviceAccount: client, workloadIps: [${clientIp}], protocol: HBONE, node: ${NODE}}
- {uid: Kubernetes//Pod/bench/app-0, name: app-0, namespace: bench, serviceAccount: app, workloadIps: [${serverIp}], protocol: HBONE, node: ${NODE}}
`);
  const { cmd, args } = ameshCommand();
  const child = spawn(cmd, [...profileFlags(), ...args, 'ztunnel', '--local-ca', ca, '--admin-address', `${ZTUNNEL_HOST}:15000`, '--metrics-address', `${ZTUNNEL_HOST}:15020`, '--readiness-address', `${ZTUNNEL_HOST}:15021`], {
    env: { ...process.env, LOCAL_XDS_PATH: mesh, NODE_NAME: NODE, RUST_LOG: 'info', LOG_FORMAT: 'json', INPOD_ENABLED: 'true', INPOD_UDS: socket, UNSTABLE_ENABLE_SOCKS5: 'false' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`the in-pod ztunnel exited (${child.exitCode}) before it was ready`);
    const ok = await fetch(`http://${ZTUNNEL_HOST}:15021/healthz/ready`).then((r) => r.status === 200, () => false);
    if (ok) return child;
    if (i > READY_POLLS) {
      child.kill('SIGTERM');
      throw new Error('the in-pod ztunnel did not become ready (ZDS snapshot of both pods)');
    }
    await new Promise((r) => setTimeout(r, READY_POLL_MS));
  }
}
