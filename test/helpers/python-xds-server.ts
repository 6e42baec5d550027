import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { packageRoot } from '../../src/lib/package-root.js';
import { waitFor } from './mesh-fixture.js';
import { opensslSelfSigned } from './openssl-ca.js';
import { PYTHON } from './python.js';
import { waypointProtoPython } from './waypoint-proto-python.js';

/** A Python peer process whose output lines are kept, so a test waits for the line it expects. */
export interface PythonPeer {
  readonly proc: ChildProcess;
  lines(): string[];
}

/** Runs `test/interop/<script> args` with its stdout and stderr kept. */
export function spawnPythonPeer(script: string, args: string[]): PythonPeer {
  const proc = spawn(PYTHON, [path.join(packageRoot(), 'test', 'interop', script), ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr.on('data', (d: Buffer) => (out += d.toString()));
  return { proc, lines: () => out.split('\n') };
}

/**
 * test/interop/xds_server_grpcio.py on `ip` (a kernel-chosen port) serving `resources`, with a self-signed
 * certificate for that IP under `dir`, once it listens; with the env a ztunnel needs to use it (a dummy token).
 * When `resources` hold `{ waypoint: { name, message } }` items (a Waypoint in proto3 JSON), amesh's waypoint proto
 * is compiled for python3-protobuf under `dir` first, and the server encodes them with it.
 */
export async function pythonXdsServer(
  dir: string,
  ip: string,
  resources: unknown[],
): Promise<{ peer: PythonPeer; env: Record<string, string> }> {
  const f = (n: string): string => path.join(dir, n);
  opensslSelfSigned(f('xds.crt'), f('xds.key'), `IP:${ip}`);
  await writeFile(f('resources.json'), JSON.stringify(resources));
  await writeFile(f('token'), 'not-a-real-token');
  const args = [ip, f('xds.crt'), f('xds.key'), f('resources.json')];
  if (resources.some((r) => typeof r === 'object' && r !== null && 'waypoint' in r)) {
    await mkdir(f('waypoint-pb'), { recursive: true });
    args.push(waypointProtoPython(f('waypoint-pb')));
  }
  const peer = spawnPythonPeer('xds_server_grpcio.py', args);
  const port = await listeningPort(peer, 'python xDS server');
  return {
    peer,
    env: { XDS_ADDRESS: `https://${ip}:${port}`, XDS_ROOT_CA: f('xds.crt'), AUTH_TOKEN: f('token') },
  };
}

/** The port in the `listening PORT` line `peer` prints once it listens; fails if it exits first. */
async function listeningPort(peer: PythonPeer, what: string): Promise<number> {
  const line = (): string | undefined => peer.lines().find((l) => l.startsWith('listening '));
  await waitFor(what, () => {
    if (peer.proc.exitCode !== null) throw new Error(`${what} exited:\n${peer.lines().join('\n')}`);
    return line() !== undefined;
  });
  return Number(line()!.split(' ')[1]);
}

/**
 * test/interop/ext_authz_grpcio_server.py, an ext_authz provider amesh did not write, once it listens on
 * `host:port`: Envoy's Authorization/Check over plaintext HTTP/2 with python3-grpcio (`grpc`), or Envoy's HTTP
 * ext_authz API with http.server (`http`). It prints one JSON line per check it receives.
 */
export async function pythonExtAuthzServer(mode: 'grpc' | 'http', host: string, port: number): Promise<PythonPeer> {
  const peer = spawnPythonPeer('ext_authz_grpcio_server.py', [mode, host, String(port)]);
  await listeningPort(peer, `python ${mode} ext_authz server`);
  return peer;
}

/**
 * test/interop/flaky_http_server.py, an HTTP/1.1 upstream amesh did not write (http.server), once it listens on
 * `host:port`: `/fail/KEY/N` answers 503 to the first N requests of KEY, `/hang/KEY/N` keeps them waiting; it prints
 * one JSON line per request it receives.
 */
export async function pythonFlakyHttpServer(host: string, port: number): Promise<PythonPeer> {
  const peer = spawnPythonPeer('flaky_http_server.py', [host, String(port)]);
  await listeningPort(peer, 'python flaky HTTP server');
  return peer;
}
