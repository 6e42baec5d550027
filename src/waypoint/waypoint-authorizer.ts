/**
 * The waypoint's authorization step: each HTTP request, and each TCP connection it relays, is put to the policies
 * istiod attached to it (`WaypointRules`), with the attributes Istio's waypoint sees: the client's SPIFFE identity
 * and address, the destination Service, address and port, and for HTTP the request itself. AUDIT and dry-run
 * results are logged; a refusal is logged with its reason, while the client only gets Envoy's `RBAC: access denied`.
 * The providers of matching CUSTOM policies are returned for the caller to ask first. A rejected config refuses all.
 */
import type { Logger } from '../lib/log.js';
import type { TrafficParties } from '../ztunnel/admin/metrics.js';
import type { ClientRequest } from './http-proxy.js';
import type { VerifiedJwt } from './jwt-authenticator.js';
import { authorizeRequest, type RequestAttributes } from './l7-authorization.js';
import type { WaypointRules } from './waypoint-rules.js';

/** What Envoy answers when RBAC denies a request. */
export const RBAC_DENIED = 'RBAC: access denied';

/** The connection a request or relay comes on: who from, for what, at which address. */
export interface Flow {
  readonly ip: string;
  readonly port: number;
  readonly peerAddr: string;
  /** The client workload's address (the peer's, when the state does not know the client). */
  readonly sourceIp: string;
  readonly parties: TrafficParties;
}

/** The decision when no policy applies to the waypoint at all: allowed, with no provider to ask. */
const UNGOVERNED = Object.freeze({ providers: Object.freeze([]), refused: undefined });

export class WaypointAuthorizer {
  constructor(
    private readonly rules: WaypointRules,
    private readonly log: Logger,
  ) {}

  /**
   * What the policies say of `req`: the ext_authz providers to ask first (CUSTOM policies that match, in Envoy's
   * filter order), then why DENY or ALLOW refuse it, if they do.
   */
  request(
    req: ClientRequest,
    f: Flow,
    jwt: VerifiedJwt | undefined,
  ): { readonly providers: readonly string[]; readonly refused: string | undefined } {
    return this.decide(f, {
      http: true,
      method: req.method ?? '',
      path: req.url ?? '/',
      host: String(req.headers[':authority'] ?? req.headers.host ?? ''),
      headers: req.headers,
      jwt,
    });
  }

  /**
   * Why a TCP connection may not be relayed, or undefined when it may. A CUSTOM policy that matches refuses it: its
   * provider can only judge HTTP requests (Istio lets such a connection through; this waypoint does not).
   */
  connection(f: Flow): string | undefined {
    const d = this.decide(f, { http: false, method: '', path: '', host: '', headers: {}, jwt: undefined });
    if (d.refused !== undefined) return d.refused;
    if (d.providers.length > 0)
      return this.refuse(f, {}, `ext_authz provider ${d.providers.join(', ')} cannot judge a TCP connection`);
    return undefined;
  }

  private decide(
    f: Flow,
    r: Pick<RequestAttributes, 'http' | 'method' | 'path' | 'host' | 'headers' | 'jwt'>,
  ): { readonly providers: readonly string[]; readonly refused: string | undefined } {
    const broken = this.rules.broken;
    if (broken !== undefined)
      return { providers: [], refused: this.refuse(f, r, `the waypoint's config was rejected: ${broken}`) };
    if (this.rules.policies.length === 0) return UNGOVERNED;
    const svc = f.parties.destinationService;
    const id = f.parties.sourceIdentity;
    const decision = authorizeRequest(this.rules.policies, {
      ...r,
      service: svc === undefined ? undefined : `${svc.namespace}/${svc.hostname}`,
      sourcePrincipal: id === undefined ? undefined : `${id.trustDomain}/ns/${id.namespace}/sa/${id.serviceAccount}`,
      sourceIp: f.sourceIp,
      remoteIp: f.sourceIp,
      destinationIp: f.ip,
      destinationPort: f.port,
      sni: undefined,
    });
    for (const policy of decision.audited)
      this.log.info({ src: f.peerAddr, policy, method: r.method, path: r.path }, 'waypoint: AUDIT policy matched');
    for (const s of decision.shadow)
      this.log.info({ src: f.peerAddr, policy: s.policy, wouldDeny: s.wouldDeny }, 'waypoint: dry-run policy');
    return {
      providers: decision.custom.length === 0 ? [] : [...new Set(decision.custom.map((p) => p.provider))],
      refused: decision.allowed ? undefined : this.refuse(f, r, decision.reason),
    };
  }

  /** Logs a refusal with its reason (the client gets only Envoy's answer). */
  refuse(f: Flow, r: Partial<Pick<RequestAttributes, 'method' | 'path'>>, reason: string): string {
    this.log.info(
      { src: f.peerAddr, dst: `${f.ip}:${f.port}`, method: r.method || undefined, path: r.path || undefined, reason },
      'waypoint: denied by authorization policy',
    );
    return reason;
  }
}
