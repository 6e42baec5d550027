import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { runToExit } from './run-to-exit.js';
import { packageRoot } from '../../src/lib/package-root.js';

/** The Go peers' sources (stdlib only), one directory under test/interop each. */
const INTEROP_DIR = path.join(packageRoot(), 'test', 'interop');
/** Offline, with the installed toolchain: the peer needs nothing but the standard library. */
const GO_ENV = { GOTOOLCHAIN: 'local', GOFLAGS: '-mod=mod', GOPROXY: 'off' };

/** `false` when `go` runs, else the reason to skip. */
export function goSkip(): false | string {
  const probe = spawnSync('go', ['version'], { encoding: 'utf8' });
  return probe.status === 0
    ? false
    : `Go is not installed (apt-get install golang-go; .ci/run does this): ${(probe.stderr || probe.error?.message || '').trim()}`;
}

/** Builds test/interop/`name` (default the HBONE peer) into a temp dir and returns the binary. */
export async function buildGoPeer(name = 'hbone_go'): Promise<string> {
  const peerDir = path.join(INTEROP_DIR, name);
  const out = path.join(await mkdtemp(path.join(tmpdir(), 'amesh-go-')), name);
  const p = spawn('go', ['build', '-o', out, '.'], {
    cwd: peerDir,
    env: { ...process.env, ...GO_ENV },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  p.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const [status] = (await once(p, 'exit')) as [number | null];
  if (status !== 0) throw new Error(`go build ${peerDir} failed: ${err}`);
  return out;
}

/** Runs the Go peer to completion. */
export function runGo(
  binary: string,
  args: string[],
  timeoutMs = 15_000,
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return runToExit(binary, args, timeoutMs);
}

/** Starts the Go HBONE server; `output` returns what it printed, `ready` resolves once it listens. */
export function startGoServer(
  binary: string,
  args: string[],
): { proc: ChildProcess; output: () => string; ready: Promise<void> } {
  return startGoPeer(binary, ['server', ...args], 'listening');
}

/** Starts a Go peer; `output` returns what it printed, `ready` resolves once it printed `readyText`. */
export function startGoPeer(
  binary: string,
  args: string[],
  readyText: string,
): { proc: ChildProcess; output: () => string; ready: Promise<void> } {
  const proc = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const ready = new Promise<void>((resolve, reject) => {
    proc.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes(readyText)) resolve();
    });
    proc.stderr.on('data', (d: Buffer) => (out += d.toString()));
    proc.once('exit', (code) => reject(new Error(`Go peer exited (${String(code)}): ${out}`)));
  });
  return { proc, output: () => out, ready };
}
