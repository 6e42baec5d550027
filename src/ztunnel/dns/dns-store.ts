import type { StringAnswer } from 'dns-packet';
import { isIP } from 'node:net';
import type { ProxyState } from '../state/proxy-state.js';
import type { Service } from '../state/service.js';
import type { Workload } from '../state/workload.js';
import { hasDomain, labelsOf, nameOf, trimDomain, wildcardsOf, type Labels } from './dns-name.js';

/** What the DNS proxy knows of the pod asking: its namespace (search domains), network (VIPs) and metric labels. */
export type DnsClient = Pick<Workload, 'name' | 'namespace' | 'network' | 'canonicalName' | 'canonicalRevision'>;

/** Kubernetes' default cluster domain (kubelet `--cluster-domain`, ztunnel `CLUSTER_DOMAIN`). */
export const DEFAULT_CLUSTER_DOMAIN = 'cluster.local';
/** The TTL of every record ztunnel answers itself (ztunnel `src/dns/server.rs` `DEFAULT_TTL_SECONDS`). */
const DNS_TTL_SECONDS = 30;

export type AddressType = 'A' | 'AAAA';

/** ztunnel's answer to one A/AAAA question: records it is the authority for (maybe none), or forward upstream. */
export type DnsLookup = { readonly kind: 'forward' } | { readonly kind: 'answer'; readonly answers: StringAnswer[] };

export interface DnsStoreOptions {
  readonly clusterDomain?: string | undefined;
  /** ztunnel `PREFERRED_SERVICE_NAMESPACE`: among services sharing a hostname, the namespace to pick after the client's own and a canonical one. */
  readonly preferredServiceNamespace?: string | undefined;
  /** ztunnel `IPV6_ENABLED`: when false, AAAA questions for known hosts get no records. Default true. */
  readonly ipv6Enabled?: boolean | undefined;
  /** For the order of addresses, which ztunnel shuffles. */
  readonly random?: () => number;
}

/** One name to look for, and the requested name without a search domain when it was found by stripping one. */
interface Alias {
  readonly name: Labels;
  readonly stripped: Labels | undefined;
}

interface ServerMatch {
  readonly service: Service;
  readonly alias: Alias;
  readonly wildcard: boolean;
}

const SVC: Labels = ['svc'];

/**
 * The names ztunnel answers from its own state (ztunnel `src/dns/server.rs` `Store`): Service hostnames and
 * ServiceEntry hosts, with VIPs on the client's network (a Kubernetes headless Service: its endpoints' addresses).
 * A query is tried as asked, expanded to a Kubernetes FQDN (`svc`, `svc.ns`, `svc.ns.svc`, and the pod forms
 * `pod.sub`, `pod.sub.ns`, `pod.sub.ns.svc`), and with the client's search domains (`<ns>.svc.<domain>`,
 * `svc.<domain>`, `<domain>`) stripped; each of those also as the wildcards that cover it. A match found by
 * stripping a search domain is answered with a CNAME to the stripped name. Everything else is forwarded.
 */
export class DnsStore {
  private readonly domain: Labels;
  private readonly svcDomain: Labels;
  private readonly preferredNs: string;
  private readonly ipv6Enabled: boolean;
  private readonly random: () => number;

  constructor(
    private readonly state: ProxyState,
    opts: DnsStoreOptions = {},
  ) {
    this.domain = labelsOf(opts.clusterDomain ?? DEFAULT_CLUSTER_DOMAIN);
    this.svcDomain = [...SVC, ...this.domain];
    this.preferredNs = opts.preferredServiceNamespace ?? '';
    this.ipv6Enabled = opts.ipv6Enabled ?? true;
    this.random = opts.random ?? Math.random;
  }

  /** Answers an A or AAAA question for `requested` (as the client wrote it) from `client`. */
  lookup(client: DnsClient, requested: string, type: AddressType): DnsLookup {
    const m = this.findServer(client, labelsOf(requested));
    if (m === undefined) return { kind: 'forward' };
    if (!this.familyAllowed(m.service, type)) return { kind: 'answer', answers: [] };
    const addresses = this.addresses(client, m.service, type);
    if (addresses.length === 0) return { kind: 'answer', answers: [] };
    const asked = requested.endsWith('.') ? requested.slice(0, -1) : requested;
    const answers: StringAnswer[] = [];
    let recordName = asked;
    if (m.alias.stripped !== undefined && !m.wildcard) {
      // The stripped name in the client's own spelling: the first labels of what it asked.
      recordName = asked.split('.').slice(0, m.alias.stripped.length).join('.');
      answers.push({ type: 'CNAME', name: asked, ttl: DNS_TTL_SECONDS, data: recordName });
    }
    for (const a of addresses) answers.push({ type, name: recordName, ttl: DNS_TTL_SECONDS, data: a });
    return { kind: 'answer', answers };
  }

  /** ztunnel's per-pod search list in shared (node) mode: the client's namespace, then `svc`, then the domain. */
  searchDomains(namespace: string): Labels[] {
    return [[...labelsOf(namespace), ...this.svcDomain], this.svcDomain, this.domain];
  }

  /** The Kubernetes FQDNs `name` may stand for, given the client's `<ns>.svc.<domain>` (ztunnel `to_kube_fqdns`). */
  kubeFqdns(name: Labels, namespacedDomain: Labels): Labels[] {
    switch (name.length) {
      case 1:
        return [[...name, ...namespacedDomain]];
      case 2:
        return [
          [...name, ...this.svcDomain],
          [...name, ...namespacedDomain],
        ];
      case 3:
        return hasDomain(name, SVC)
          ? [
              [...name, ...this.domain],
              [...name, ...this.svcDomain],
            ]
          : [[...name, ...this.svcDomain]];
      case 4:
        return hasDomain(name, SVC) ? [[...name, ...this.domain]] : [];
      default:
        return [];
    }
  }

  /** Every name to try for `name` from `client`, each once, in ztunnel's order (`get_aliases`). */
  aliases(namespace: string, name: Labels): Alias[] {
    const out: Alias[] = [];
    const seen = new Set<string>();
    const add = (a: Alias): void => {
      const key = nameOf(a.name);
      if (seen.has(key)) return;
      seen.add(key);
      out.push(a);
    };
    const namespacedDomain = [...labelsOf(namespace), ...this.svcDomain];
    add({ name, stripped: undefined });
    for (const fqdn of this.kubeFqdns(name, namespacedDomain)) add({ name: fqdn, stripped: undefined });
    for (const search of this.searchDomains(namespace)) {
      const stripped = trimDomain(name, search);
      if (stripped === undefined) continue;
      add({ name: stripped, stripped });
      for (const fqdn of this.kubeFqdns(stripped, namespacedDomain)) add({ name: fqdn, stripped });
    }
    return out;
  }

  private findServer(client: DnsClient, name: Labels): ServerMatch | undefined {
    // A service without VIPs stays ours only as a Kubernetes headless Service; a ServiceEntry without addresses
    // is forwarded (ztunnel tells them apart by the domain).
    const headlessSuffix = `.${nameOf(this.svcDomain)}`;
    for (const alias of this.aliases(client.namespace, name)) {
      for (const candidate of wildcardsOf(alias.name)) {
        const services = this.state
          .servicesByHostname(nameOf(candidate))
          .filter(
            (s) =>
              (s.vips.length > 0 || s.hostname.endsWith(headlessSuffix)) &&
              (s.visibility !== 'Namespace' || s.namespace === client.namespace),
          );
        const service = bestMatch(services, client.namespace, this.preferredNs);
        if (service !== undefined) return { service, alias, wildcard: candidate[0] === '*' };
      }
    }
    return undefined;
  }

  /** A single-stack service (and any service for AAAA when IPv6 is off) has no records of the other family. */
  private familyAllowed(s: Service, type: AddressType): boolean {
    if (type === 'AAAA' && !this.ipv6Enabled) return false;
    return !((s.ipFamilies === 'IPv4' && type === 'AAAA') || (s.ipFamilies === 'IPv6' && type === 'A'));
  }

  /** The service's VIPs on the client's network, or for a headless service one address per endpoint; shuffled. */
  private addresses(client: DnsClient, s: Service, type: AddressType): string[] {
    const family = type === 'A' ? 4 : 6;
    const out: string[] = [];
    if (s.vips.length === 0) {
      for (const ep of Object.values(s.endpoints)) {
        const ip = this.state.workloadByUid(ep.workloadUid)?.workloadIps.find((a) => isIP(a) === family);
        if (ip !== undefined) out.push(ip);
      }
    } else {
      for (const vip of s.vips) {
        const slash = vip.indexOf('/');
        const ip = vip.slice(slash + 1);
        if (vip.slice(0, slash) === client.network && isIP(ip) === family) out.push(ip);
      }
    }
    for (let i = out.length - 1; i > 0; i--) {
      const j = Math.floor(this.random() * (i + 1));
      [out[i], out[j]] = [out[j]!, out[i]!];
    }
    return out;
  }
}

/**
 * Among services sharing a hostname: the one in the client's namespace, else the last canonical one, else one in the
 * preferred namespace, else the first (ztunnel `src/state/service.rs` `ServiceMatch::find_best_match`).
 */
function bestMatch(services: readonly Service[], clientNs: string, preferredNs: string): Service | undefined {
  let best: { s: Service; canonical: boolean } | undefined;
  for (const s of services) {
    if (s.namespace === clientNs) return s;
    if (s.canonical) best = { s, canonical: true };
    else if (preferredNs !== '' && s.namespace === preferredNs && best?.canonical !== true)
      best = { s, canonical: false };
    else best ??= { s, canonical: false };
  }
  return best?.s;
}
