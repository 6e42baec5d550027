/**
 * meshConfig.extensionProviders (istio.io/api `mesh/v1alpha1/config.proto`), from istiod's mesh config
 * (`mesh-config.ts`): the ext_authz providers CUSTOM AuthorizationPolicies name
 * (`envoyExtAuthzHttp`, `envoyExtAuthzGrpc`), as istio `pilot/pkg/security/authz/builder/extauthz.go` reads them.
 * A provider that cannot be used (no service or port, a timeout that is not a duration) is left out with a warning,
 * so the policies that name it deny.
 */
import { stringMatch } from './authorization.js';
import type { StringMatchModel } from './types.js';

export interface ExtAuthzProviderModel {
  readonly name: string;
  readonly namespace: string;
  readonly hostname: string;
  readonly port: number;
  readonly timeoutMs: number | undefined;
  readonly failOpen: boolean;
  readonly statusOnError: number;
  readonly api:
    | {
        readonly http: {
          readonly pathPrefix: string;
          readonly includeRequestHeadersInCheck: readonly StringMatchModel[];
          readonly includeAdditionalHeadersInCheck: Readonly<Record<string, string>>;
          readonly headersToUpstreamOnAllow: readonly StringMatchModel[];
          readonly headersToDownstreamOnDeny: readonly StringMatchModel[];
          readonly headersToDownstreamOnAllow: readonly StringMatchModel[];
        };
      }
    | { readonly grpc: Record<string, never> };
}

type Obj = Readonly<Record<string, unknown>>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string => (typeof v === 'string' ? v : '');
const strList = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);
/** Header names match without case: the patterns are lower-cased, as the waypoint lower-cases names. */
const headerMatches = (v: unknown): StringMatchModel[] => strList(v).map((h) => stringMatch(h.toLowerCase()));

/** A protobuf Duration in JSON: `1.5s`, `200ms` is not one. */
function durationMs(v: unknown): number | undefined | 'invalid' {
  if (v === undefined || v === null) return undefined;
  const m = typeof v === 'string' ? /^([0-9]+(?:\.[0-9]+)?)s$/.exec(v) : null;
  return m === null ? 'invalid' : Math.round(Number(m[1]) * 1000);
}

/** Why a provider cannot be used, if it cannot. */
function providerProblem(
  name: string,
  service: string,
  port: number,
  timeout: number | undefined | 'invalid',
  rawTimeout: unknown,
): string | undefined {
  if (name === '') return 'has no name';
  if (service === '') return 'has no service';
  if (!Number.isInteger(port) || port < 1 || port > 65535) return `port ${String(port)} is not a port`;
  if (timeout === 'invalid') return `timeout ${JSON.stringify(rawTimeout)} is not a duration`;
  return undefined;
}

/** The ext_authz providers of the mesh config (`mesh-config.ts`). */
export function extAuthzProviders(mesh: Obj | undefined): {
  providers: ReadonlyMap<string, ExtAuthzProviderModel>;
  warnings: string[];
} {
  const warnings: string[] = [];
  const providers = new Map<string, ExtAuthzProviderModel>();
  const list = isObj(mesh) && Array.isArray(mesh['extensionProviders']) ? mesh['extensionProviders'] : [];
  for (const p of list) {
    if (!isObj(p)) continue;
    const name = str(p['name']);
    const http = p['envoyExtAuthzHttp'];
    const grpc = p['envoyExtAuthzGrpc'];
    const cfg = [http, grpc].find(isObj);
    if (cfg === undefined) continue;
    const service = str(cfg['service']);
    const port = typeof cfg['port'] === 'number' ? cfg['port'] : Number(cfg['port']);
    const timeout = durationMs(cfg['timeout']);
    const problem = providerProblem(name, service, port, timeout, cfg['timeout']);
    if (problem !== undefined) {
      warnings.push(`meshConfig extension provider ${JSON.stringify(name)} ${problem}; policies naming it deny`);
      continue;
    }
    const slash = service.indexOf('/');
    const status = typeof cfg['statusOnError'] === 'string' ? Number(cfg['statusOnError']) : cfg['statusOnError'];
    providers.set(name, {
      name,
      namespace: slash < 0 ? '' : service.slice(0, slash),
      hostname: slash < 0 ? service : service.slice(slash + 1),
      port,
      timeoutMs: timeout === 'invalid' ? undefined : timeout,
      failOpen: cfg['failOpen'] === true,
      statusOnError: typeof status === 'number' && Number.isInteger(status) ? status : 0,
      api: isObj(http)
        ? {
            http: {
              pathPrefix: str(http['pathPrefix']),
              includeRequestHeadersInCheck: headerMatches(http['includeRequestHeadersInCheck']),
              includeAdditionalHeadersInCheck: Object.fromEntries(
                Object.entries(
                  isObj(http['includeAdditionalHeadersInCheck']) ? http['includeAdditionalHeadersInCheck'] : {},
                )
                  .filter((e): e is [string, string] => typeof e[1] === 'string')
                  .map(([k, v]) => [k.toLowerCase(), v]),
              ),
              headersToUpstreamOnAllow: headerMatches(http['headersToUpstreamOnAllow']),
              headersToDownstreamOnDeny: headerMatches(http['headersToDownstreamOnDeny']),
              headersToDownstreamOnAllow: headerMatches(http['headersToDownstreamOnAllow']),
            },
          }
        : { grpc: {} },
    });
  }
  return { providers, warnings };
}
