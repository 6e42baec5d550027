/**
 * `amesh ztunnel` as a process of its own, with its admin, metrics and readiness addresses: the local demo's two
 * ztunnels, and the tests that need a ztunnel outside their own process.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { ZTUNNEL_ADMIN_PORT, ZTUNNEL_READINESS_PORT, ZTUNNEL_STATS_PORT } from '../lib/istio-ports.js';
import { ameshCommand } from '../up/amesh-command.js';

/**
 * How long the demo waits for a step (a process it started to become ready, an edit to take effect) before it
 * gives up: seconds on an idle machine, many more on a loaded one (a CI runner, test files running side by side).
 * It only bounds a failure.
 */
export const STEP_DEADLINE_MS = 60_000;

/** ztunnel's admin, metrics and readiness ports. */
const ISTIO_CONTROL_PORTS = {
  admin: ZTUNNEL_ADMIN_PORT,
  metrics: ZTUNNEL_STATS_PORT,
  readiness: ZTUNNEL_READINESS_PORT,
} as const;

export interface ZtunnelProcess {
  readonly child: ChildProcess;
  readonly admin: string;
  readonly metrics: string;
  readonly readiness: string;
  /** Everything the process printed, for assertions and post-mortems. */
  output(): string;
  waitReady(timeoutMs?: number): Promise<void>;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export interface ZtunnelProcessOptions {
  readonly localConfig: string;
  readonly nodeName: string;
  readonly localCa?: string;
  /** Loopback IP for admin/metrics/readiness (distinct IPs keep two ztunnels apart). */
  readonly controlIp: string;
  /** Their ports; Istio's (15000, 15020, 15021) unless given. */
  readonly controlPorts?: { readonly admin: number; readonly metrics: number; readonly readiness: number };
  readonly env?: Readonly<Record<string, string>>;
  readonly quiet?: boolean;
}

/** Starts `amesh ztunnel` as its own process, as a node would run it. */
export function spawnZtunnel(o: ZtunnelProcessOptions): ZtunnelProcess {
  const { cmd, args } = ameshCommand();
  const ports = o.controlPorts ?? ISTIO_CONTROL_PORTS;
  const admin = `${o.controlIp}:${ports.admin}`;
  const metrics = `${o.controlIp}:${ports.metrics}`;
  const readiness = `${o.controlIp}:${ports.readiness}`;
  const argv = [
    ...args,
    'ztunnel',
    '--admin-address',
    admin,
    '--metrics-address',
    metrics,
    '--readiness-address',
    readiness,
  ];
  if (o.localCa !== undefined) argv.push('--local-ca', o.localCa);
  const child = spawn(cmd, argv, {
    env: { ...process.env, LOCAL_XDS_PATH: o.localConfig, NODE_NAME: o.nodeName, ...o.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const onData = (d: Buffer): void => {
    out += d.toString();
    if (o.quiet === false) process.stdout.write(d);
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    admin,
    metrics,
    readiness,
    output: () => out,
    async waitReady(timeoutMs = STEP_DEADLINE_MS) {
      const deadline = Date.now() + timeoutMs;
      let last = '';
      while (Date.now() < deadline) {
        if (child.exitCode !== null) throw new Error(`ztunnel ${o.nodeName} exited with ${child.exitCode}:\n${out}`);
        try {
          const r = await fetch(`http://${readiness}/healthz/ready`);
          last = await r.text();
          if (r.status === 200) return;
        } catch (e) {
          last = (e as Error).message;
        }
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error(`ztunnel ${o.nodeName} not ready after ${timeoutMs}ms (${last.trim()}):\n${out}`);
    },
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (child.exitCode === null) child.kill(signal);
      return exited;
    },
  };
}
