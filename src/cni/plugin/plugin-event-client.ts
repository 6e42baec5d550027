/**
 * Hands a pod to the node agent: `POST /cmdadd` with a JSON `CniPluginAddEvent` over HTTP/1.1 on the agent's unix
 * socket, as Istio's plugin does (istio cni/pkg/plugin/cnieventclient.go: path `/cmdadd`, `Content-Type:
 * application/json`, a 5 s limit on the whole exchange, success only on 200, up to 1 MiB of an error answer quoted).
 * Either way the pod is not captured unless this resolves, so the caller fails the ADD on any error (fail closed).
 */
import http from 'node:http';
import { MeshError, describeError } from '../../lib/errors.js';
import type { CniPluginAddEvent } from './cni-plugin-add-event.js';

export const CNI_ADD_EVENT_PATH = '/cmdadd';
/** Istio's client timeout: the agent answers once the pod's rules are in and ztunnel has acknowledged it. */
export const PLUGIN_EVENT_TIMEOUT_MS = 5_000;
const MAX_ERROR_BODY = 1024 * 1024;

/** Why the agent's socket could not be reached, in words an operator acts on for the two usual causes. */
function connectFailure(e: NodeJS.ErrnoException): string {
  if (e.code === 'ENOENT') return 'the socket does not exist';
  if (e.code === 'ECONNREFUSED') return 'nothing accepts connections on the socket';
  return describeError(e);
}

export function postCniAddEvent(
  socketPath: string,
  event: CniPluginAddEvent,
  timeoutMs = PLUGIN_EVENT_TIMEOUT_MS,
): Promise<void> {
  const pod = `${event.PodNamespace}/${event.PodName}`;
  const body = JSON.stringify(event);
  return new Promise((resolve, reject) => {
    const fail = (e: MeshError): void => {
      clearTimeout(timer);
      req.destroy();
      reject(e);
    };
    const unavailable = (why: string): MeshError =>
      new MeshError(
        'CNI_ERR_AGENT_UNAVAILABLE',
        `cannot hand pod ${pod} to the node agent at ${socketPath}: ${why} (is amesh cni-agent running on this node?)`,
      );
    // No keep-alive agent: one request, then the socket closes and the plugin process can exit.
    const req = http.request(
      {
        socketPath,
        path: CNI_ADD_EVENT_PATH,
        method: 'POST',
        agent: false,
        headers: { host: 'unix', 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          if (size < MAX_ERROR_BODY) chunks.push(c.subarray(0, MAX_ERROR_BODY - size));
          size += c.length;
        });
        res.on('error', (e) => fail(unavailable(`the answer broke off: ${describeError(e)}`)));
        res.on('end', () => {
          clearTimeout(timer);
          if (res.statusCode === 200) {
            resolve();
            return;
          }
          const text = Buffer.concat(chunks).toString('utf8').trim();
          reject(
            new MeshError(
              'CNI_ERR_CAPTURE_FAILED',
              `the node agent at ${socketPath} did not capture pod ${pod}: ${String(res.statusCode)} ${text === '' ? '(no message)' : text}`,
            ),
          );
        });
      },
    );
    const timer = setTimeout(() => fail(unavailable(`no answer within ${timeoutMs} ms`)), timeoutMs);
    req.on('error', (e: NodeJS.ErrnoException) => fail(unavailable(connectFailure(e))));
    req.end(body);
  });
}
