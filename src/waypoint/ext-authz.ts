/**
 * The waypoint's ext_authz: a request a CUSTOM AuthorizationPolicy matches is put to that policy's provider, as
 * Envoy's ext_authz filter does in the chain Istio builds (istio `pilot/pkg/security/authz/builder/extauthz.go`).
 * The provider is a Service of the mesh, reached over HBONE with the waypoint's identity like any upstream.
 *
 * HTTP (`envoyExtAuthzHttp`): a check request with the original method and `pathPrefix` + path, no body, and the
 * headers Envoy sends by default (Host, Authorization, Content-Length) plus those the provider asks for; a 200
 * answer allows, copying the headers it names into the upstream request and the downstream response; any other
 * answer denies with that answer's status, body and the headers it names. A provider that cannot be asked in time
 * denies with `statusOnError` (403 when unset), unless `failOpen`.
 *
 * gRPC (`envoyExtAuthzGrpc`): Envoy's `Authorization/Check` with the request's attributes (`ext-authz-grpc.ts`);
 * status OK allows with the answer's headers, anything else denies with its denied response, 403 when it has none.
 */
import http from 'node:http';
import type { Duplex } from 'node:stream';
import { create } from '@bufbuild/protobuf';
import { durationMs, timestampNow } from '@bufbuild/protobuf/wkt';
import {
  CheckRequestSchema,
  type CheckRequest,
  type CheckResponse,
} from '../api/envoy/service/auth/v3/external_auth_pb.js';
import { checkOverStream } from './ext-authz-grpc.js';
import type { ClientRequest } from './http-proxy.js';
import type { ExtAuthzProvider } from '../api/amesh/waypoint/v1/waypoint_pb.js';
import type { StringMatch } from '../api/istio/security/authorization_pb.js';
import { MeshError } from '../lib/errors.js';
import type { Outbound } from '../ztunnel/proxy/outbound.js';
import type { ProxyContext } from '../ztunnel/proxy/proxy-context.js';
import { resolveServiceBehindWaypoint } from '../ztunnel/state/upstream.js';
import type { Workload } from '../ztunnel/state/workload.js';

/** Envoy's ext_authz timeout when the provider gives none. */
const DEFAULT_TIMEOUT_MS = 600_000;
/** Headers Envoy's HTTP ext_authz sends in every check request (its `allowed_headers` defaults). */
const ALWAYS_SENT = new Set(['host', 'authorization', 'content-length']);

type NameMatch = (name: string) => boolean;

export interface ExtAuthzProviderConfig {
  readonly name: string;
  readonly namespace: string;
  readonly hostname: string;
  readonly port: number;
  readonly timeoutMs: number;
  readonly failOpen: boolean;
  readonly statusOnError: number;
  readonly http:
    | {
        readonly pathPrefix: string;
        readonly includeInCheck: NameMatch;
        readonly additional: readonly (readonly [string, string])[];
        readonly toUpstreamOnAllow: NameMatch;
        readonly toDownstreamOnDeny: NameMatch;
        readonly toDownstreamOnAllow: NameMatch;
      }
    | undefined;
}

export type ExtAuthzVerdict =
  | {
      readonly allowed: true;
      readonly upstream: readonly (readonly [string, string])[];
      readonly downstream: readonly (readonly [string, string])[];
    }
  | {
      readonly allowed: false;
      readonly status: number;
      readonly headers: readonly (readonly [string, string])[];
      readonly body: string;
      readonly reason: string;
    };

/** Header names as a list of Istio string patterns match them (lower case; exact, prefix, suffix). */
function nameMatch(ms: readonly StringMatch[]): NameMatch {
  const tests = ms.map((m): NameMatch => {
    const t = m.matchType;
    switch (t.case) {
      case 'exact':
        return (n) => n === t.value.toLowerCase();
      case 'prefix':
        return (n) => n.startsWith(t.value.toLowerCase());
      case 'suffix':
        return (n) => n.endsWith(t.value.toLowerCase());
      default:
        return () => false;
    }
  });
  return (n) => tests.some((f) => f(n));
}

export function extAuthzProvidersFromXds(ps: readonly ExtAuthzProvider[]): ReadonlyMap<string, ExtAuthzProviderConfig> {
  return new Map(
    ps.map((p) => {
      const h = p.api.case === 'http' ? p.api.value : undefined;
      return [
        p.name,
        Object.freeze({
          name: p.name,
          namespace: p.namespace,
          hostname: p.hostname,
          port: p.port,
          timeoutMs: p.timeout === undefined ? DEFAULT_TIMEOUT_MS : durationMs(p.timeout),
          failOpen: p.failOpen,
          statusOnError: p.statusOnError || 403,
          http:
            h === undefined
              ? undefined
              : {
                  pathPrefix: h.pathPrefix,
                  includeInCheck: nameMatch(h.includeRequestHeadersInCheck),
                  additional: Object.entries(h.includeAdditionalHeadersInCheck).map(
                    ([k, v]) => [k.toLowerCase(), v] as const,
                  ),
                  toUpstreamOnAllow: nameMatch(h.headersToUpstreamOnAllow),
                  toDownstreamOnDeny: nameMatch(h.headersToDownstreamOnDeny),
                  toDownstreamOnAllow: nameMatch(h.headersToDownstreamOnAllow),
                },
        }),
      ] as const;
    }),
  );
}

function pairs(headers: http.IncomingHttpHeaders, keep: NameMatch): [string, string][] {
  const out: [string, string][] = [];
  for (const [k, v] of Object.entries(headers))
    if (v !== undefined && !k.startsWith(':') && keep(k))
      for (const one of Array.isArray(v) ? v : [v]) out.push([k, one]);
  return out;
}

export class ExtAuthzClient {
  constructor(
    private readonly ctx: ProxyContext,
    private readonly outbound: Outbound,
    private readonly sourceIp: string,
  ) {}

  /**
   * Puts `req` to `p`; `self` is the waypoint's workload, `peerAddr` the client's (for logs), `source` the client's
   * SPIFFE identity (the gRPC API's `source.principal`).
   */
  async check(
    p: ExtAuthzProviderConfig,
    req: ClientRequest,
    self: Workload,
    peerAddr: string,
    source: string | undefined,
  ): Promise<ExtAuthzVerdict> {
    try {
      const upstream = await this.connect(p, self, peerAddr);
      if (p.http === undefined)
        return verdictOf(p, await checkOverStream(upstream, checkRequest(req, source), p.timeoutMs));
      return await checkHttp(p, p.http, req, upstream);
    } catch (e) {
      const reason = `ext_authz provider ${p.name} could not be asked: ${(e as Error).message}`;
      if (p.failOpen) return { allowed: true, upstream: [], downstream: [] };
      return { allowed: false, status: p.statusOnError, headers: [], body: '', reason };
    }
  }

  /** A stream to one of the provider's endpoints, over HBONE with the waypoint's identity. */
  private async connect(p: ExtAuthzProviderConfig, self: Workload, peerAddr: string): Promise<Duplex> {
    const svc = this.ctx.state.serviceByHostname(p.hostname, p.namespace || self.namespace);
    if (svc === undefined)
      throw new MeshError('ZT_ERR_NO_HEALTHY_UPSTREAM', `${p.hostname} is not a Service of the mesh`);
    const vip = svc.vips[0]?.slice(svc.vips[0].indexOf('/') + 1) ?? '';
    const dest = resolveServiceBehindWaypoint(this.ctx.state, self, svc, p.port, vip);
    return (await this.outbound.connect(peerAddr, this.sourceIp, dest.ip, dest.port)).upstream;
  }
}

/** An HTTP check request on `upstream`, read as Envoy's HTTP ext_authz reads the answer. */
function checkHttp(
  p: ExtAuthzProviderConfig,
  h: NonNullable<ExtAuthzProviderConfig['http']>,
  req: ClientRequest,
  upstream: Duplex,
): Promise<ExtAuthzVerdict> {
  const headers: Record<string, string | string[]> = {};
  for (const [k, v] of pairs(req.headers, (n) => ALWAYS_SENT.has(n) || h.includeInCheck(n))) {
    const cur = headers[k];
    headers[k] = cur === undefined ? v : [...(Array.isArray(cur) ? cur : [cur]), v];
  }
  const authority = req.headers[':authority'];
  if (headers['host'] === undefined && typeof authority === 'string') headers['host'] = authority;
  for (const [k, v] of h.additional) headers[k] = v;
  headers['content-length'] = '0';
  return new Promise<ExtAuthzVerdict>((resolve, reject) => {
    const out = http.request(
      {
        method: req.method,
        path: `${h.pathPrefix}${req.url ?? '/'}`,
        headers,
        createConnection: () => upstream,
        signal: AbortSignal.timeout(p.timeoutMs),
      },
      (r) => {
        let body = '';
        r.setEncoding('utf8');
        r.on('data', (c: string) => (body += c));
        r.on('error', reject);
        r.on('end', () => {
          if (r.statusCode === 200)
            resolve({
              allowed: true,
              upstream: pairs(r.headers, h.toUpstreamOnAllow),
              downstream: pairs(r.headers, h.toDownstreamOnAllow),
            });
          else
            resolve({
              allowed: false,
              status: r.statusCode ?? 403,
              headers: pairs(r.headers, h.toDownstreamOnDeny),
              body,
              reason: `ext_authz provider ${p.name} denied the request (${r.statusCode ?? 0})`,
            });
        });
      },
    );
    out.on('error', reject);
    out.end();
  });
}

/** The gRPC API's view of a request (envoy `attribute_context.proto`), as Envoy's ext_authz fills it. */
function checkRequest(req: ClientRequest, source: string | undefined): CheckRequest {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers))
    if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(',') : v;
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  // Envoy's header map holds the request's pseudo-headers, whatever protocol the client spoke.
  headers[':authority'] ??= headers['host'] ?? '';
  headers[':method'] ??= req.method ?? '';
  headers[':path'] ??= url;
  headers[':scheme'] ??= 'http';
  return create(CheckRequestSchema, {
    attributes: {
      source: { principal: source ?? '' },
      request: {
        time: timestampNow(),
        http: {
          id: headers['x-request-id'] ?? '',
          method: req.method ?? '',
          headers,
          path: url,
          host: headers[':authority'] ?? headers['host'] ?? '',
          scheme: 'http',
          query: q < 0 ? '' : url.slice(q + 1),
          protocol: `HTTP/${req.httpVersion}`,
        },
      },
    },
  });
}

/** Envoy's reading of a gRPC answer: status OK allows with its headers; anything else denies, 403 unless it says. */
function verdictOf(p: ExtAuthzProviderConfig, r: CheckResponse): ExtAuthzVerdict {
  const kv = (hs: readonly { header?: { key: string; value: string } | undefined }[]): [string, string][] =>
    hs.flatMap((h) => (h.header === undefined ? [] : [[h.header.key.toLowerCase(), h.header.value]]));
  if ((r.status?.code ?? 0) === 0) {
    const ok = r.httpResponse.case === 'okResponse' ? r.httpResponse.value : undefined;
    return { allowed: true, upstream: kv(ok?.headers ?? []), downstream: kv(ok?.responseHeadersToAdd ?? []) };
  }
  const denied = r.httpResponse.case === 'deniedResponse' ? r.httpResponse.value : undefined;
  return {
    allowed: false,
    status: denied?.status?.code || 403,
    headers: kv(denied?.headers ?? []),
    body: denied?.body ?? '',
    reason: `ext_authz provider ${p.name} denied the request (gRPC status ${r.status?.code ?? 0})`,
  };
}
