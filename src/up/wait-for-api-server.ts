/**
 * How `amesh up` waits for its API server, a static pod it does not run itself, as kubeadm's wait-control-plane
 * phase does: `GET /readyz` over HTTPS, verified against the cluster's CA, until it answers 200 or the time is up.
 */
import https from 'node:https';
import { MeshError } from '../lib/errors.js';

const POLL_MS = 250;
const REQUEST_TIMEOUT_MS = 2_000;

function readyz(server: string, ca: string): Promise<string | undefined> {
  return new Promise((resolve) => {
    const req = https.get(new URL('/readyz', server), { ca, timeout: REQUEST_TIMEOUT_MS }, (res) => {
      res.resume();
      resolve(res.statusCode === 200 ? undefined : `readyz answered ${String(res.statusCode)}`);
    });
    req.once('timeout', () => req.destroy(new Error(`no answer in ${String(REQUEST_TIMEOUT_MS)} ms`)));
    req.once('error', (e) => resolve(e.message));
  });
}

/**
 * Resolves once the API server at `server` is ready; throws UP_ERR_APISERVER with the last failure and `hint` after
 * `timeoutMs`.
 */
export async function waitForApiServer(
  o: { readonly serverUrl: string; readonly caCertPem: string },
  timeoutMs: number,
  hint: string,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const why = await readyz(o.serverUrl, o.caCertPem);
    if (why === undefined) return;
    if (Date.now() > deadline)
      throw new MeshError(
        'UP_ERR_APISERVER',
        `the API server at ${o.serverUrl} is not ready after ${String(Math.round(timeoutMs / 1000))} s (${why}); ${hint}`,
      );
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}
