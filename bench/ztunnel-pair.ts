/**
 * The bench's SOCKS5 path: two `amesh ztunnel` processes in local mode (LOCAL_XDS_PATH and a plug-in CA), one
 * serving the client workload's IP (SOCKS5 on 15080), the other the app's (HBONE on 15008), as two nodes would.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ameshCommand } from '../src/demo/ztunnel-process.js';
import { DATA_PATH_NODE_FLAGS } from '../src/lib/node-flags.js';
import { profileFlags } from './capture-bench.js';

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
}

const READY_POLLS = 200;
const READY_POLL_MS = 50;

/** Starts the pair and resolves once both answer ready. */
export async function startZtunnelPair(o: ZtunnelPairOptions): Promise<ChildProcess[]> {
  const mesh = path.join(o.dir, `${o.name}-mesh.yaml`);
  await writeFile(mesh, `workloads:
- {uid: ${o.name}-client, name: client, namespace: bench, serviceAccount: client, workloadIps: [${o.clientIp}], protocol: HBONE, node: ${o.name}1}
- {uid: ${o.name}-app, name: app, namespace: bench, serviceAccount: app, workloadIps: [${o.appIp}], protocol: HBONE, node: ${o.name}2}
`);
  const { cmd, args } = ameshCommand();
  const script = o.nodeFlags === undefined ? args : [...o.nodeFlags, ...args.filter((a) => !DATA_PATH_NODE_FLAGS.includes(a))];
  const procs = o.controlIps.map((ip, i) => {
    const argv = [...profileFlags(), ...script, 'ztunnel', '--local-ca', o.ca, '--admin-address', `${ip}:15000`, '--metrics-address', `${ip}:15020`, '--readiness-address', `${ip}:15021`];
    const [file, ...rest] = o.nofile === undefined ? [cmd, ...argv] : ['prlimit', `--nofile=${String(o.nofile)}:${String(o.nofile)}`, cmd, ...argv];
    return spawn(file, rest, {
      env: { ...process.env, LOCAL_XDS_PATH: mesh, NODE_NAME: `${o.name}${String(i + 1)}`, RUST_LOG: 'info', LOG_FORMAT: 'json', UNSTABLE_ENABLE_SOCKS5: 'true' },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
  });
  for (const ip of o.controlIps) {
    for (let i = 0; ; i++) {
      const ok = await fetch(`http://${ip}:15021/healthz/ready`).then((r) => r.status === 200, () => false);
      if (ok) break;
      if (i > READY_POLLS) {
        for (const p of procs) p.kill('SIGTERM');
        throw new Error(`ztunnel on ${ip} did not become ready`);
      }
      await new Promise((r) => setTimeout(r, READY_POLL_MS));
    }
  }
  return procs;
}
