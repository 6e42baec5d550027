/**
 * The actions kubelet runs against a container, for its probes (pkg/kubelet/prober/prober.go) and its lifecycle
 * hooks (pkg/kubelet/lifecycle/handlers.go): `exec` runs the command inside the container (the runtime's exec),
 * `tcpSocket` and `httpGet` (HTTP, or HTTPS unverified) connect from the node's network namespace to the pod IP (a socket made in the node's
 * namespace, as kubelet's own are, so the node agent's probe rules see them), each within a timeout.
 */
import http from 'node:http';
import https from 'node:https';
import { isIP, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import type { V1ContainerPort, V1ExecAction, V1HTTPGetAction, V1TCPSocketAction } from '@kubernetes/client-node';
import { tcpSocketInNetns } from '../native/native.js';
import { runCommand } from './run-command.js';

export interface HandlerTarget {
  readonly podIp: string;
  /** The argv that runs a command inside the container (the runtime's exec). */
  readonly execArgv: (command: readonly string[]) => string[];
  /** The node's network namespace path, where tcp and http actions start. */
  readonly nodeNetnsPath: string;
  readonly ports: readonly V1ContainerPort[];
}

export interface ContainerHandler {
  readonly exec?: V1ExecAction;
  readonly tcpSocket?: V1TCPSocketAction;
  readonly httpGet?: V1HTTPGetAction;
}

export type HandlerOutcome = { readonly ok: true } | { readonly ok: false; readonly why: string };

/**
 * Runs `handler` against `target`. `httpStatusCounts`: whether an HTTP status outside 200-399 fails (a probe) or
 * any answer succeeds (a lifecycle hook).
 */
export async function runHandler(
  handler: ContainerHandler,
  target: HandlerTarget,
  timeoutMs: number,
  httpStatusCounts = true,
): Promise<HandlerOutcome> {
  const { exec, tcpSocket, httpGet } = handler;
  try {
    if (exec !== undefined) return await execIn(target, exec.command ?? [], timeoutMs);
    if (tcpSocket !== undefined)
      return await connect(target, tcpSocket.host ?? target.podIp, port(target, tcpSocket.port), timeoutMs);
    if (httpGet !== undefined)
      return await get(
        target,
        httpGet.host ?? target.podIp,
        port(target, httpGet.port),
        httpGet.path ?? '/',
        httpGet.scheme === 'HTTPS',
        timeoutMs,
        httpStatusCounts,
      );
  } catch (e) {
    return { ok: false, why: (e as Error).message };
  }
  return { ok: false, why: 'no exec, tcpSocket or httpGet handler (amesh up runs these three)' };
}

function port(target: HandlerTarget, p: number | string | undefined): number | undefined {
  if (typeof p === 'number') return p;
  if (p !== undefined && /^\d+$/.test(p)) return Number(p);
  return target.ports.find((x) => x.name === p)?.containerPort;
}

async function execIn(target: HandlerTarget, command: readonly string[], timeoutMs: number): Promise<HandlerOutcome> {
  if (command.length === 0) return { ok: false, why: 'exec handler without a command' };
  const [cmd, ...args] = target.execArgv(command);
  const r = await runCommand(cmd!, args, { timeoutMs });
  if (r.code === 0) return { ok: true };
  const output = (r.stdout + r.stderr).trim();
  return {
    ok: false,
    why:
      r.code === null
        ? `command timed out after ${String(timeoutMs / 1000)}s`
        : `command ${JSON.stringify(command.join(' '))} exited with ${String(r.code)}${output === '' ? '' : `: ${output}`}`,
  };
}

function connect(
  target: HandlerTarget,
  host: string,
  port: number | undefined,
  timeoutMs: number,
): Promise<HandlerOutcome> {
  if (port === undefined)
    return Promise.resolve({ ok: false, why: 'the handler names a port the container does not declare' });
  return new Promise((resolve) => {
    const s = tcpSocketInNetns(target.nodeNetnsPath, 4);
    const timer = setTimeout(() => s.destroy(new Error(`timed out after ${String(timeoutMs)} ms`)), timeoutMs);
    s.once('connect', () => {
      clearTimeout(timer);
      s.destroy();
      resolve({ ok: true });
    });
    s.once('error', (e) => {
      clearTimeout(timer);
      resolve({ ok: false, why: `dial tcp ${host}:${String(port)}: ${e.message}` });
    });
    s.connect(port, host);
  });
}

function get(
  target: HandlerTarget,
  host: string,
  port: number | undefined,
  urlPath: string,
  tls: boolean,
  timeoutMs: number,
  statusCounts: boolean,
): Promise<HandlerOutcome> {
  if (port === undefined)
    return Promise.resolve({ ok: false, why: 'the handler names a port the container does not declare' });
  return new Promise((resolve) => {
    const connect = (): Socket => tcpSocketInNetns(target.nodeNetnsPath, 4).connect(port, host);
    // scheme HTTPS: TLS without verifying the server, as kubelet's prober (prober/http.go) and hooks do.
    const req = (tls ? https : http).get(
      {
        host,
        port,
        path: urlPath,
        timeout: timeoutMs,
        createConnection: tls
          ? () =>
              tlsConnect({
                socket: connect(),
                servername: isIP(host) === 0 ? host : undefined,
                rejectUnauthorized: false,
              })
          : connect,
        // kubelet's probes and lifecycle hooks say who they are (prober/http.go, lifecycle/handlers.go).
        headers: { 'user-agent': statusCounts ? 'kube-probe/1.32' : 'kube-lifecycle/1.32' },
      },
      (res) => {
        res.resume();
        const code = res.statusCode ?? 0;
        resolve(
          !statusCounts || (code >= 200 && code < 400)
            ? { ok: true }
            : { ok: false, why: `HTTP probe failed with statuscode: ${String(code)}` },
        );
      },
    );
    req.once('timeout', () => req.destroy(new Error(`timed out after ${String(timeoutMs)} ms`)));
    req.once('error', (e) => resolve({ ok: false, why: e.message }));
  });
}
