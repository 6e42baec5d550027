/**
 * The capture section of `npm run bench`: the paths between two pod network namespaces on one veth link.
 * `pod-direct`: neither pod enrolled, the client in pod A dials pod B's IP. `pod-capture`: both pods enrolled with
 * Istio's in-pod rules, pod A on node 1 and pod B on node 2, the same two-node topology as the SOCKS5 path `amesh`:
 * each node has its own node agent ZDS server, whose snapshot holds only that node's pod, and its own ztunnel in
 * in-pod mode (INPOD_ENABLED; bench/ztunnel-pair.ts). The same unchanged client is captured on 15001 in pod A by
 * node 1's ztunnel and carried over HBONE to B:15008, where node 2's ztunnel listens and hands it to the app.
 * hbone-bench.ts measures them beside its loopback paths, with the client inside pod A (nsenter).
 */
import { type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, openSync } from 'node:fs';
import path from 'node:path';
import { pino } from 'pino';
import { ZtunnelServer } from '../src/cni/agent/ztunnel-server.js';
import { podPair, type PodPair } from '../test/helpers/pod-pair.js';
import { startZtunnelPair } from './ztunnel-pair.js';

/** The capture paths `BENCH_PATHS` can name. */
export const CAPTURE_PATHS = ['pod-direct', 'pod-capture'] as const;
export type CapturePath = (typeof CAPTURE_PATHS)[number];

/** Where a capture path's measuring child runs (pod A) and where its app listens (pod B). */
export interface PodTarget {
  readonly clientNetns: string;
  readonly serverNetns: string;
  readonly serverIp: string;
  /** The proxies on the path (for `pod-capture`, both nodes' in-pod ztunnels), for CPU and RSS. */
  readonly pids: number[];
}

export interface CapturePaths {
  readonly targets: Partial<Record<CapturePath, PodTarget>>;
  stop(): Promise<void>;
}

/** One pair per path, so both exist at once and rounds interleave; the subnets live only inside the pods. */
const SUBNETS: Record<CapturePath, string> = { 'pod-direct': '10.99.1', 'pod-capture': '10.99.2' };
/**
 * TIME_WAIT reuse for the pods' outgoing connections, as the loopback paths get from the kernel's default (2:
 * loopback only). Without it the connection phase of pod-direct, ~14,000 connections from one address to one
 * port per round, leaves the pod's 28,232 ephemeral ports in TIME_WAIT and the next round's fall to ~300/s.
 */
const POD_TCP_TW_REUSE = 'net.ipv4.tcp_tw_reuse=1';
/**
 * `BENCH_POD_MTU`: the pods' veth MTU, 1500 (a pod's eth0) unless given. 65535 matches the loopback the SOCKS5 path
 * runs on, so the in-pod ratios can be compared with the same segment size (docs/performance.md, "In-pod capture").
 */
function podMtu(): number | undefined {
  const v = process.env['BENCH_POD_MTU'];
  if (v === undefined || v === '') return undefined;
  const mtu = Number(v);
  if (!Number.isInteger(mtu) || mtu < 1280 || mtu > 65535)
    throw new Error(`BENCH_POD_MTU: ${v} is not an MTU from 1280 to 65535`);
  return mtu;
}
/** The in-pod ztunnels' admin, metrics and readiness listen on the host, node 1's and node 2's. */
const ZTUNNEL_HOSTS = ['127.0.114.1', '127.0.114.2'] as const;

/** Builds the pods for the paths in `wanted`; for `pod-capture`, starts both nodes' ZDS servers and in-pod ztunnels. */
export async function startCapturePaths(
  dir: string,
  ca: string,
  wanted: readonly CapturePath[],
): Promise<CapturePaths> {
  const pairs: PodPair[] = [];
  const fds: number[] = [];
  const zds: ZtunnelServer[] = [];
  let ztunnels: ChildProcess[] = [];
  const stop = async (): Promise<void> => {
    await Promise.all(
      ztunnels
        .filter((z) => z.exitCode === null)
        .map((z) => {
          const exited = once(z, 'exit');
          z.kill('SIGTERM');
          return exited;
        }),
    );
    for (const s of zds.splice(0)) s.close();
    for (const fd of fds.splice(0)) closeSync(fd);
    for (const p of pairs.splice(0)) await p.remove();
  };
  try {
    const targets: Partial<Record<CapturePath, PodTarget>> = {};
    for (const name of wanted) {
      const [clientIp, serverIp] = [`${SUBNETS[name]}.1`, `${SUBNETS[name]}.2`];
      const pods = await podPair(clientIp, serverIp, name === 'pod-capture');
      pairs.push(pods);
      const mtu = podMtu();
      for (const ns of [pods.client, pods.server]) {
        await ns.exec('sysctl', ['-qw', POD_TCP_TW_REUSE]);
        if (mtu !== undefined) await ns.exec('ip', ['link', 'set', 'eth0', 'mtu', String(mtu)]);
      }
      const target = { clientNetns: pods.client.path, serverNetns: pods.server.path, serverIp, pids: [] as number[] };
      if (name === 'pod-capture') {
        // Each node's agent hands its ztunnel only the pod on that node (named as ztunnel-pair.ts's mesh file names it).
        const sockets = (['client', 'app'] as const).map((pod, i) => {
          const netns = openSync(i === 0 ? pods.client.path : pods.server.path, 'r');
          fds.push(netns);
          const socket = path.join(dir, `ztunnel-${String(i + 1)}.sock`);
          const server = new ZtunnelServer(
            socket,
            () => [{ uid: `bench-pod-${pod}`, info: { name: pod, namespace: 'bench', serviceAccount: pod }, netns }],
            pino({ level: 'silent' }),
          );
          zds.push(server);
          server.listen();
          return socket;
        });
        ztunnels = await startZtunnelPair({
          name: 'pod-node',
          dir,
          ca,
          clientIp,
          appIp: serverIp,
          controlIps: ZTUNNEL_HOSTS,
          inpodSockets: [sockets[0]!, sockets[1]!],
        });
        target.pids.push(...ztunnels.map((z) => z.pid!));
      }
      targets[name] = target;
    }
    return { targets, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}
