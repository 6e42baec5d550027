import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { DATA_PATH_NODE_FLAGS } from '../lib/node-flags.js';

/**
 * Whether the build of the source tree at `root` (`dist/`, tsc's output) is newer than every source file in `src/`:
 * then it runs what the source says.
 */
export function buildIsCurrent(root: string, built: string): boolean {
  if (!existsSync(built)) return false;
  const builtAt = statSync(built).mtimeMs;
  const newer = (dir: string): boolean =>
    readdirSync(dir, { withFileTypes: true }).some((e) =>
      e.isDirectory() ? newer(path.join(dir, e.name)) : statSync(path.join(dir, e.name)).mtimeMs > builtAt,
    );
  return !newer(path.join(root, 'src'));
}

let fromSource: { cmd: string; args: string[] } | undefined;

/**
 * The `amesh` entry point with the data-path Node flags. Compiled, it is the `main.js` beside this file's directory.
 * Run from the source tree (tests, development), it is the build in `dist/` when that is current, else the source
 * through tsx, which costs each process about a second of CPU more to start (the suite starts over a hundred).
 */
export function ameshCommand(): { cmd: string; args: string[] } {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const js = path.resolve(here, '../cli/main.js');
  if (existsSync(js)) return { cmd: process.execPath, args: [...DATA_PATH_NODE_FLAGS, js] };
  if (fromSource === undefined) {
    const root = path.resolve(here, '../..');
    const built = path.join(root, 'dist', 'src', 'cli', 'main.js');
    fromSource = {
      cmd: process.execPath,
      args: buildIsCurrent(root, built)
        ? [...DATA_PATH_NODE_FLAGS, built]
        : [...DATA_PATH_NODE_FLAGS, '--import', 'tsx', path.resolve(here, '../cli/main.ts')],
    };
  }
  return { cmd: fromSource.cmd, args: [...fromSource.args] };
}

/**
 * How long the demo waits for a step (a process it started to become ready, an edit to take effect) before it
 * gives up: seconds on an idle machine, many more on a loaded one (a CI runner, test files running side by side).
 * It only bounds a failure.
 */
export const STEP_DEADLINE_MS = 60_000;

/** ztunnel's admin, metrics and readiness ports (ztunnel `src/config.rs`). */
const ISTIO_CONTROL_PORTS = { admin: 15000, metrics: 15020, readiness: 15021 } as const;

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
