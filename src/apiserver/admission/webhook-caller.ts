/**
 * One call to one admission webhook: a POST of the AdmissionReview as JSON over TLS 1.3, verified against the
 * webhook's `caBundle` (the system roots when it has none) and the name kube-apiserver verifies (the URL's host, or
 * `<service>.<namespace>.svc` for a service reference, dialled at the endpoint the resolver picked). The URL carries
 * `?timeout=<n>s` and the call is abandoned after `timeoutSeconds`, as kube-apiserver's webhook client does.
 * Failures are CallErrors worded as Go's HTTP client words them (`Post "<url>": …`), which the dispatcher turns into
 * kube-apiserver's "failed calling webhook" errors.
 */
import https from 'node:https';
import { isIP } from 'node:net';
import { asNumber, asObject, asString, type JsonObject } from '../validation/json-fields.js';
import { resolveServiceEndpoint, ServiceResolutionError, type ServiceLookups } from './service-resolver.js';

/** The most of a webhook's answer read; a larger one is a failed call. */
const MAX_RESPONSE_BYTES = 3 * 1024 * 1024;

/** A webhook that could not be called or whose HTTP answer was unusable. */
export class CallError extends Error {}

interface Target {
  /** As the error messages name it: `https://istiod.istio-system.svc:443/validate?timeout=10s`. */
  readonly url: string;
  readonly host: string;
  readonly port: number;
  readonly path: string;
  readonly servername: string | undefined;
}

function target(client: JsonObject, timeoutSeconds: number, lookups: ServiceLookups): Target {
  const query = `timeout=${String(timeoutSeconds)}s`;
  const service = asObject(client.service);
  if (service !== undefined) {
    const namespace = asString(service.namespace) ?? '';
    const name = asString(service.name) ?? '';
    const port = asNumber(service.port) ?? 443;
    const path = asString(service.path) ?? '/';
    const host = `${name}.${namespace}.svc`;
    const url = `https://${host}:${String(port)}${path}?${query}`;
    try {
      const ep = resolveServiceEndpoint(lookups, namespace, name, port);
      return { url, host: ep.host, port: ep.port, path: `${path}?${query}`, servername: host };
    } catch (e) {
      if (e instanceof ServiceResolutionError) throw new CallError(`Post "${url}": ${e.message}`);
      throw e;
    }
  }
  const u = new URL(asString(client.url) ?? '');
  u.search = u.search === '' ? query : `${u.search}&${query}`;
  const host = u.hostname.replace(/^\[|\]$/g, '');
  return {
    url: u.toString(),
    host,
    port: u.port === '' ? 443 : Number(u.port),
    path: `${u.pathname}${u.search}`,
    servername: isIP(host) === 0 ? host : undefined,
  };
}

/** The CA certificates a webhook's TLS is verified with; undefined means the system roots. */
function caOf(client: JsonObject): string | undefined {
  const bundle = asString(client.caBundle);
  return bundle === undefined || bundle === '' ? undefined : Buffer.from(bundle, 'base64').toString('utf8');
}

/** POSTs `review` to webhook `w` and returns its parsed JSON answer. */
export function callWebhook(w: JsonObject, review: object, lookups: ServiceLookups): Promise<unknown> {
  const client = asObject(w.clientConfig) ?? {};
  const timeoutSeconds = asNumber(w.timeoutSeconds) ?? 10;
  let t: Target;
  try {
    t = target(client, timeoutSeconds, lookups);
  } catch (e) {
    return Promise.reject(e instanceof CallError ? e : new CallError(`invalid webhook client config: ${String(e)}`));
  }
  const body = JSON.stringify(review);
  return new Promise((resolve, reject) => {
    const fail = (why: string): void => reject(new CallError(`Post "${t.url}": ${why}`));
    const req = https.request(
      {
        host: t.host,
        port: t.port,
        path: t.path,
        method: 'POST',
        servername: t.servername,
        ca: caOf(client),
        minVersion: 'TLSv1.3',
        agent: false,
        headers: {
          'content-type': 'application/json',
          accept: 'application/json',
          'content-length': Buffer.byteLength(body),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size > MAX_RESPONSE_BYTES) {
            req.destroy();
            fail(`response body larger than ${String(MAX_RESPONSE_BYTES)} bytes`);
            return;
          }
          chunks.push(c);
        });
        res.on('error', (e) => fail(e.message));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          if ((res.statusCode ?? 0) < 200 || (res.statusCode ?? 0) > 299) {
            fail(`the webhook answered HTTP ${String(res.statusCode)}: ${text.slice(0, 200)}`);
            return;
          }
          try {
            resolve(JSON.parse(text) as unknown);
          } catch {
            fail('the webhook answered with a body that is not JSON');
          }
        });
      },
    );
    const timer = setTimeout(() => {
      req.destroy();
      fail('context deadline exceeded');
    }, timeoutSeconds * 1000);
    timer.unref();
    req.on('error', (e: NodeJS.ErrnoException) => fail(describe(e, t)));
    req.on('close', () => clearTimeout(timer));
    req.end(body);
  });
}

function describe(e: NodeJS.ErrnoException, t: Target): string {
  if (e.code === 'ECONNREFUSED') return `dial tcp ${t.host}:${String(t.port)}: connect: connection refused`;
  if (e.code === 'EHOSTUNREACH') return `dial tcp ${t.host}:${String(t.port)}: connect: no route to host`;
  if (e.code === 'DEPTH_ZERO_SELF_SIGNED_CERT' || e.code === 'UNABLE_TO_VERIFY_LEAF_SIGNATURE')
    return `tls: failed to verify certificate: x509: certificate signed by unknown authority`;
  if (e.code === 'ERR_TLS_CERT_ALTNAME_INVALID')
    return `tls: failed to verify certificate: x509: certificate is not valid for ${t.servername ?? t.host}`;
  return e.code !== undefined ? `${e.code}: ${e.message}` : e.message;
}
