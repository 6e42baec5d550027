/**
 * The records of a cluster's DNS zones, answered as CoreDNS's kubernetes plugin answers them in kubeadm's Corefile
 * (`kubernetes cluster.local in-addr.arpa ip6.arpa { pods insecure; fallthrough in-addr.arpa ip6.arpa; ttl 30 }`),
 * from the Services, EndpointSlices and Namespaces it is fed. Read from coredns plugin/kubernetes `handler.go`,
 * `kubernetes.go` (`Services`, `Records`, `findServices`, `findPods`), `reverse.go`, `ns.go`, `object/service.go`,
 * `object/endpoint.go` and plugin `backend_lookup.go` (`A`, `SRV`, `PTR`, `NS`, `SOA`, `BackendError`):
 *
 * - `<svc>.<ns>.svc.<zone>`: A/AAAA of the ClusterIPs; of a headless Service, its ready endpoints' addresses
 *   (NXDOMAIN while it has none); an ExternalName Service is a CNAME, followed in the zone or, outside it, upstream.
 * - `<endpoint>.<svc>.<ns>.svc.<zone>`: one endpoint, by its `hostname` or its dashed address (`10-244-1-5`).
 * - `_<port>._<proto>.<svc>.<ns>.svc.<zone>`: SRV of the named port, targeting the Service's name (headless: each
 *   endpoint's name), with their addresses as additional records; without `_<port>._<proto>`, every port's.
 * - `<a>-<b>-<c>-<d>.<ns>.pod.<zone>`: the address the name spells (`pods insecure`), in a namespace that exists.
 * - PTR of a ClusterIP (the Service's name) or of an endpoint's address (the endpoint's name).
 * - `dns-version.<zone>` TXT `1.1.0`; `ns.dns.<zone>` and the zone's NS: kube-dns's ClusterIP when this server is
 *   one of its endpoints, else this server's own addresses; the zone's SOA.
 * - A name that does not exist is NXDOMAIN, a name without records of the type asked NOERROR: both with the zone's
 *   SOA (`ns.dns.<zone>`, `hostmaster.<zone>`, serial the last change's Unix time, 7200 1800 86400, minimum the TTL).
 *   Before the informers synced, NXDOMAIN is SERVFAIL. AXFR and IXFR are REFUSED.
 * - Names outside the zones, and misses in the reverse zones (`fallthrough in-addr.arpa ip6.arpa`), are forwarded.
 *
 * Names compare case-insensitively; answers keep the case of the query's name.
 */
import { isIP } from 'node:net';
import type { Answer, Question } from 'dns-packet';
import type { V1EndpointSlice, V1Namespace, V1Service } from '@kubernetes/client-node';
import { canonicalIp } from '../lib/ip.js';
import { RCODE, type DnsAnswer, type Rcode } from '../ztunnel/dns/dns-message.js';
import { hasDomain, labelsOf, type Labels } from '../ztunnel/dns/dns-name.js';
import {
  endpointHostname,
  parseClusterDnsRequest,
  podAddress,
  reverseAddress,
  type ClusterDnsRequest,
} from './cluster-dns-names.js';

/** The label the EndpointSlice controller names a slice's Service with (discovery.k8s.io/v1 `LabelServiceName`). */
const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';
/** The schema version of the Kubernetes DNS specification the plugin serves, and its TTL (`kubernetes.go`). */
const DNS_SCHEMA_VERSION = '1.1.0';
const DNS_VERSION_TTL = 28_800;
/** The SOA's timers (`backend_lookup.go` `SOA`); its TTL is the records' TTL, at most 300. */
const SOA_TIMERS = { refresh: 7200, retry: 1800, expire: 86_400 } as const;
const SOA_MAX_TTL = 300;
/** CNAMEs followed before giving up (`backend_lookup.go` `maxCnameChainLength`). */
const MAX_CNAME_CHAIN = 10;
/** The port a Service or slice without ports is given: it has addresses but no SRV records. */
const NO_PORT: Port = { name: '', port: -1, protocol: '' };

interface Port {
  readonly name: string;
  readonly port: number;
  readonly protocol: string;
}

interface ServiceRecord {
  readonly name: string;
  readonly namespace: string;
  readonly type: string;
  readonly externalName: string;
  readonly clusterIps: readonly string[];
  readonly headless: boolean;
  readonly ports: readonly Port[];
}

interface SliceRecord {
  readonly namespace: string;
  readonly service: string;
  readonly ports: readonly Port[];
  /** The ready endpoints' addresses, each with its endpoint's hostname. */
  readonly addresses: readonly { readonly ip: string; readonly hostname: string | undefined }[];
}

/** What a name stands for (the plugin's `msg.Service`): an address or a name, a port (-1: none), and its own name. */
interface Target {
  readonly host: string;
  readonly port: number;
  /** The name the target is known by: an SRV record's target, an NS name. */
  readonly key: string;
}

/** What answering one query needs to know about the zone it is in. */
interface Zone {
  readonly labels: Labels;
  /** The zone as the query wrote it: the SOA and the names made below it keep the query's case. */
  readonly text: string;
  readonly reverse: boolean;
}

/** A lookup's outcome: the name does not exist, or these records (possibly none). */
type Lookup = { readonly nx: true } | { readonly nx: false; answers: Answer[]; additionals: Answer[] };

/** A/AAAA records, or a CNAME chain whose last target is outside the zones. */
type AddressLookup =
  Lookup | { readonly nx: false; readonly external: { readonly chain: Answer[]; readonly target: string } };

/**
 * The answer to one query: records of the cluster (or an error with the zone's SOA); a CNAME chain to complete
 * by asking `target` upstream, its answers following the chain (`unresolved` if no upstream answers); or, for
 * a name outside the zones, nothing: the query goes upstream as it is.
 */
export type ClusterDnsResult =
  | { readonly kind: 'answer'; readonly answer: DnsAnswer }
  | {
      readonly kind: 'external';
      readonly chain: readonly Answer[];
      readonly target: Question;
      readonly unresolved: DnsAnswer;
    }
  | { readonly kind: 'forward' };

const FORWARD: ClusterDnsResult = { kind: 'forward' };
const NAME_ERROR: Lookup = { nx: true };

export interface ClusterDnsRecordsOptions {
  /** The cluster domain (`cluster.local`). */
  readonly domain: string;
  /** The records' TTL in seconds (the plugin's `ttl`). */
  readonly ttl: number;
  /** This server's own non-loopback addresses (the plugin's bound addresses), for `ns.dns.<zone>`. */
  readonly localIps: readonly string[];
  /** Milliseconds since the epoch: when a change happened, for the SOA serial. */
  readonly now: () => number;
}

export class ClusterDnsRecords {
  private readonly services = new Map<string, ServiceRecord>();
  private readonly slices = new Map<string, SliceRecord>();
  /** Slices by their Service (`ns/name`), by their own key. */
  private readonly slicesByService = new Map<string, Map<string, SliceRecord>>();
  private readonly namespaces = new Set<string>();
  private readonly zones: readonly Labels[];
  private readonly domain: string;
  private readonly localIps: readonly string[];
  private synced = false;
  /** Unix time of the last change, the SOA serial (the plugin's `Serial`, from its controller's `modified`). */
  private serial = 0;

  constructor(private readonly opts: ClusterDnsRecordsOptions) {
    this.domain = labelsOf(opts.domain).join('.');
    this.zones = [labelsOf(opts.domain), ['in-addr', 'arpa'], ['ip6', 'arpa']];
    this.localIps = opts.localIps.map((ip) => canonicalIp(ip) ?? ip);
  }

  setService(s: V1Service): void {
    const r = serviceRecord(s);
    if (r !== undefined) this.put(this.services, `${r.namespace}/${r.name}`, r);
  }

  deleteService(s: V1Service): void {
    this.remove(this.services, `${s.metadata?.namespace ?? ''}/${s.metadata?.name ?? ''}`);
  }

  setEndpointSlice(s: V1EndpointSlice): void {
    const key = `${s.metadata?.namespace ?? ''}/${s.metadata?.name ?? ''}`;
    const r = sliceRecord(s);
    if (r === undefined) {
      this.deleteEndpointSlice(s);
      return;
    }
    const old = this.slices.get(key);
    if (old !== undefined && `${old.namespace}/${old.service}` !== `${r.namespace}/${r.service}`)
      this.slicesByService.get(`${old.namespace}/${old.service}`)?.delete(key);
    this.put(this.slices, key, r);
    const byService = this.slicesByService.get(`${r.namespace}/${r.service}`) ?? new Map<string, SliceRecord>();
    byService.set(key, r);
    this.slicesByService.set(`${r.namespace}/${r.service}`, byService);
  }

  deleteEndpointSlice(s: V1EndpointSlice): void {
    const key = `${s.metadata?.namespace ?? ''}/${s.metadata?.name ?? ''}`;
    const old = this.slices.get(key);
    if (old === undefined) return;
    const service = `${old.namespace}/${old.service}`;
    const byService = this.slicesByService.get(service);
    byService?.delete(key);
    if (byService?.size === 0) this.slicesByService.delete(service);
    this.remove(this.slices, key);
  }

  setNamespace(ns: V1Namespace): void {
    const name = ns.metadata?.name;
    if (name === undefined || this.namespaces.has(name)) return;
    this.namespaces.add(name);
    this.changed();
  }

  deleteNamespace(ns: V1Namespace): void {
    if (this.namespaces.delete(ns.metadata?.name ?? '')) this.changed();
  }

  /** The informers have listed everything: a name not found is NXDOMAIN from now on, no longer SERVFAIL. */
  markSynced(): void {
    this.synced = true;
  }

  answer(q: Question): ClusterDnsResult {
    const name = labelsOf(q.name);
    const zoneLabels = this.zones
      .filter((z) => sameName(name, z) || hasDomain(name, z))
      .sort((a, b) => b.length - a.length)[0];
    if (zoneLabels === undefined) return FORWARD;
    const written = q.name.replace(/\.$/, '').split('.');
    const zone: Zone = {
      labels: zoneLabels,
      text: written.slice(written.length - zoneLabels.length).join('.'),
      reverse: zoneLabels !== this.zones[0],
    };
    const owner = q.name.replace(/\.$/, '');
    switch (q.type) {
      case 'A':
      case 'AAAA': {
        const r = this.addresses(zone, owner, name, q.type, []);
        if ('external' in r)
          return {
            kind: 'external',
            chain: r.external.chain,
            target: { name: r.external.target, type: q.type, class: 'IN' },
            unresolved: this.withSoa(zone, RCODE.NOERROR),
          };
        return this.finish(zone, r);
      }
      case 'TXT':
        return this.finish(zone, this.txt(zone, owner, name));
      case 'CNAME':
        return this.finish(zone, this.cname(zone, owner, name));
      case 'PTR':
        return this.finish(zone, this.ptr(zone, owner, name));
      case 'SRV':
        return this.finish(zone, this.srv(zone, owner, name));
      case 'SOA':
        return this.finish(zone, records(sameName(name, zone.labels) ? [this.soa(zone)] : []));
      case 'AXFR':
      case 'IXFR':
        return { kind: 'answer', answer: { rcode: RCODE.REFUSED, authoritative: false, answers: [], additionals: [] } };
      case 'NS':
        if (sameName(name, zone.labels)) return this.finish(zone, this.ns(zone, owner));
        return this.finish(zone, this.exists(zone, name));
      default:
        return this.finish(zone, this.exists(zone, name));
    }
  }

  /** The response for a lookup (`handler.go`): a name error falls through in the reverse zones, else carries the SOA. */
  private finish(zone: Zone, r: Lookup): ClusterDnsResult {
    if (r.nx) {
      if (zone.reverse) return FORWARD;
      return { kind: 'answer', answer: this.withSoa(zone, this.synced ? RCODE.NXDOMAIN : RCODE.SERVFAIL) };
    }
    if (r.answers.length === 0) return { kind: 'answer', answer: this.withSoa(zone, RCODE.NOERROR) };
    return {
      kind: 'answer',
      answer: { rcode: RCODE.NOERROR, authoritative: true, answers: r.answers, additionals: r.additionals },
    };
  }

  private withSoa(zone: Zone, rcode: Rcode): DnsAnswer {
    return { rcode, authoritative: true, answers: [], authorities: [this.soa(zone)], additionals: [] };
  }

  private soa(zone: Zone): Answer {
    return {
      type: 'SOA',
      name: zone.text,
      ttl: Math.min(this.opts.ttl, SOA_MAX_TTL),
      data: {
        mname: `ns.dns.${zone.text}`,
        rname: `hostmaster.${zone.text}`,
        serial: this.serial,
        ...SOA_TIMERS,
        minimum: this.opts.ttl,
      },
    };
  }

  /** Whether the name exists, for a type the zone has no records of: NODATA or NXDOMAIN (`handler.go`'s fake A lookup). */
  private exists(zone: Zone, name: Labels): Lookup {
    return this.targets(zone, name, 'A') === undefined ? NAME_ERROR : records([]);
  }

  /** A or AAAA records of `name` (`backend_lookup.go` `A`, `AAAA`), following an ExternalName's CNAME. */
  private addresses(zone: Zone, owner: string, name: Labels, type: 'A' | 'AAAA', chain: Answer[]): AddressLookup {
    const targets = this.targets(zone, name, type);
    if (targets === undefined) return NAME_ERROR;
    const answers: Answer[] = [];
    const seen = new Set<string>();
    for (const t of targets) {
      const family = isIP(t.host);
      if (family === 0) {
        const target = labelsOf(t.host);
        if (sameName(target, name) || chain.length > MAX_CNAME_CHAIN) continue;
        const cname: Answer = { type: 'CNAME', name: owner, ttl: this.opts.ttl, data: t.host };
        if (
          chain.some((c) => c.name.toLowerCase() === owner.toLowerCase() && sameName(labelsOf(cnameTarget(c)), target))
        )
          continue;
        if (!sameName(target, zone.labels) && !hasDomain(target, zone.labels))
          return { nx: false, external: { chain: [cname], target: t.host } };
        const next = this.addresses(zone, t.host, target, type, [...chain, cname]);
        if ('external' in next)
          return { nx: false, external: { ...next.external, chain: [cname, ...next.external.chain] } };
        if (!next.nx && next.answers.length > 0) answers.push(cname, ...next.answers);
        continue;
      }
      if ((family === 4) !== (type === 'A') || seen.has(t.host)) continue;
      seen.add(t.host);
      answers.push({ type, name: owner, ttl: this.opts.ttl, data: t.host });
    }
    return records(answers);
  }

  /**
   * SRV records of `name` (`backend_lookup.go` `SRV`): one per target and port, weighted evenly (100 split
   * between every target, at least 1), with each target's address as an additional record.
   */
  private srv(zone: Zone, owner: string, name: Labels): Lookup {
    const targets = this.targets(zone, name, 'SRV');
    if (targets === undefined) return NAME_ERROR;
    const weight = Math.max(1, Math.floor((100 / (100 * targets.length)) * 100));
    const answers: Answer[] = [];
    const additionals: Answer[] = [];
    const seen = new Set<string>();
    for (const t of targets) {
      if (t.port === -1) continue;
      const srvKey = `${t.key} ${t.port}`;
      if (!seen.has(srvKey))
        answers.push({
          type: 'SRV',
          name: owner,
          ttl: this.opts.ttl,
          data: { priority: 0, weight, port: t.port, target: t.key },
        });
      seen.add(srvKey);
      const addressKey = `${t.key} ${t.host}`;
      if (!seen.has(addressKey))
        additionals.push({ type: isIP(t.host) === 4 ? 'A' : 'AAAA', name: t.key, ttl: this.opts.ttl, data: t.host });
      seen.add(addressKey);
    }
    return { nx: false, answers, additionals };
  }

  private cname(zone: Zone, owner: string, name: Labels): Lookup {
    const targets = this.targets(zone, name, 'CNAME');
    if (targets === undefined) return NAME_ERROR;
    const first = targets[0];
    return records(
      first !== undefined && isIP(first.host) === 0
        ? [{ type: 'CNAME', name: owner, ttl: this.opts.ttl, data: first.host }]
        : [],
    );
  }

  /** `dns-version.<zone>`; another name exists (NODATA) only if it has records of some type (`kubernetes.go` `Services`). */
  private txt(zone: Zone, owner: string, name: Labels): Lookup {
    const relative = name.slice(0, name.length - zone.labels.length);
    if (relative.length === 1 && relative[0] === 'dns-version')
      return records([{ type: 'TXT', name: owner, ttl: DNS_VERSION_TTL, data: DNS_SCHEMA_VERSION }]);
    return (this.records(zone, relative)?.length ?? 0) > 0 ? records([]) : NAME_ERROR;
  }

  /** PTR of a ClusterIP, else of the endpoints with that address (`reverse.go`); other names only exist or not. */
  private ptr(zone: Zone, owner: string, name: Labels): Lookup {
    const ip = reverseAddress(name);
    if (ip === undefined)
      return this.records(zone, name.slice(0, name.length - zone.labels.length)) === undefined
        ? NAME_ERROR
        : records([]);
    const names = this.namesOf(ip);
    if (names.length === 0) return NAME_ERROR;
    return records([...new Set(names)].map((data) => ({ type: 'PTR', name: owner, ttl: this.opts.ttl, data })));
  }

  /** The zone's NS records, each with its address as an additional record (`backend_lookup.go` `NS`). */
  private ns(zone: Zone, owner: string): Lookup {
    const answers: Answer[] = [];
    const additionals: Answer[] = [];
    const seen = new Set<string>();
    for (const { name, ip } of this.nameservers(zone)) {
      additionals.push({ type: isIP(ip) === 4 ? 'A' : 'AAAA', name, ttl: this.opts.ttl, data: ip });
      if (seen.has(name)) continue;
      seen.add(name);
      answers.push({ type: 'NS', name: owner, ttl: this.opts.ttl, data: name });
    }
    return { nx: false, answers, additionals };
  }

  /**
   * What `name` stands for (`kubernetes.go` `Services`), undefined when it does not exist: `ns.dns.<zone>` is
   * this server's addresses (of the type asked); an SRV name's CNAMEs (ExternalName) are left out.
   */
  private targets(zone: Zone, name: Labels, type: string): Target[] | undefined {
    const relative = name.slice(0, name.length - zone.labels.length);
    if (relative.length === 2 && relative[0] === 'ns' && relative[1] === 'dns')
      return this.nameservers(zone)
        .filter(({ ip }) => (isIP(ip) === 4 ? type === 'A' : type === 'AAAA'))
        .map(({ name: key, ip }) => ({ host: ip, port: -1, key }));
    const found = this.records(zone, relative);
    return type === 'SRV' ? found?.filter((t) => isIP(t.host) !== 0) : found;
  }

  /** The Services, endpoints or pod a name below the zone stands for (`kubernetes.go` `Records`). */
  private records(zone: Zone, relative: Labels): Target[] | undefined {
    const r = parseClusterDnsRequest(relative);
    if (r === undefined) return undefined;
    if (r.podOrSvc === '') return [];
    if (zone.reverse || !this.namespaces.has(r.namespace)) return undefined;
    return r.podOrSvc === 'pod' ? this.pod(zone, r) : this.service(zone, r);
  }

  /** `pods insecure`: the address the name spells, unchecked (`findPods`). */
  private pod(zone: Zone, r: ClusterDnsRequest): Target[] | undefined {
    if (r.service === '') return [];
    const ip = podAddress(r.service);
    if (ip === undefined) return undefined;
    return [{ host: ip, port: -1, key: `${r.service}.${r.namespace}.pod.${zone.text}` }];
  }

  /** `findServices`: an ExternalName's name, an endpoint query's or a headless Service's endpoints, or the ClusterIPs. */
  private service(zone: Zone, r: ClusterDnsRequest): Target[] | undefined {
    if (r.service === '') return [];
    const svc = this.services.get(`${r.namespace}/${r.service}`);
    if (svc === undefined) return undefined;
    const svcName = `${svc.name}.${svc.namespace}.svc.${zone.text}`;
    if (svc.type === 'ExternalName') {
      if (r.endpoint !== '' || r.port !== '' || r.protocol !== '') return undefined;
      if (svc.externalName === '' || isIP(svc.externalName) !== 0) return undefined;
      return [{ host: svc.externalName, port: -1, key: svcName }];
    }
    const matches = (p: Port): boolean =>
      (r.port === '' || r.port === p.name.toLowerCase()) &&
      (r.protocol === '' || r.protocol === p.protocol.toLowerCase());
    const out: Target[] = [];
    let found = false;
    if (svc.headless || r.endpoint !== '') {
      for (const slice of this.slicesByService.get(`${svc.namespace}/${svc.name}`)?.values() ?? [])
        for (const a of slice.addresses) {
          const hostname = endpointHostname(a.ip, a.hostname);
          if (r.endpoint !== '' && r.endpoint !== hostname.toLowerCase()) continue;
          for (const p of slice.ports.filter(matches)) {
            out.push({ host: a.ip, port: p.port, key: `${hostname}.${svcName}` });
            found = true;
          }
        }
      return found ? out : undefined;
    }
    for (const p of svc.ports.filter(matches)) {
      found = true;
      for (const ip of svc.clusterIps) if (isIP(ip) !== 0) out.push({ host: ip, port: p.port, key: svcName });
    }
    return found ? out : undefined;
  }

  /** The names an address has: the first Service whose ClusterIP it is, else every endpoint with it (`reverse.go`). */
  private namesOf(ip: string): string[] {
    for (const svc of this.services.values())
      if (svc.clusterIps.includes(ip)) return [`${svc.name}.${svc.namespace}.svc.${this.domain}`];
    const names: string[] = [];
    for (const slice of this.slices.values())
      for (const a of slice.addresses)
        if (canonicalIp(a.ip) === ip)
          names.push(`${endpointHostname(a.ip, a.hostname)}.${slice.service}.${slice.namespace}.svc.${this.domain}`);
    return names;
  }

  /**
   * The zone's nameservers (`ns.go` `nsAddrs`): the Services whose endpoints this server's addresses are (kube-dns:
   * its ClusterIPs; a headless one: its endpoints), or, when none are, `ns.dns.<zone>` at this server's addresses.
   */
  private nameservers(zone: Zone): { name: string; ip: string }[] {
    const out: { name: string; ip: string }[] = [];
    let found = false;
    for (const local of this.localIps)
      for (const slice of this.slices.values()) {
        if (!slice.addresses.some((a) => canonicalIp(a.ip) === local)) continue;
        found = true;
        const svc = this.services.get(`${slice.namespace}/${slice.service}`);
        if (svc === undefined) continue;
        const svcName = `${svc.name}.${svc.namespace}.svc.${zone.text}`;
        if (svc.headless)
          for (const a of slice.addresses)
            out.push({ name: `${endpointHostname(a.ip, a.hostname)}.${svcName}`, ip: a.ip });
        else for (const ip of svc.clusterIps) if (isIP(ip) !== 0) out.push({ name: svcName, ip });
      }
    if (!found) for (const ip of this.localIps) out.push({ name: `ns.dns.${zone.text}`, ip });
    return out;
  }

  private put<T>(map: Map<string, T>, key: string, value: T): void {
    const old = map.get(key);
    map.set(key, value);
    if (old === undefined || JSON.stringify(old) !== JSON.stringify(value)) this.changed();
  }

  private remove<T>(map: Map<string, T>, key: string): void {
    if (map.delete(key)) this.changed();
  }

  private changed(): void {
    this.serial = Math.floor(this.opts.now() / 1000);
  }
}

function records(answers: Answer[]): Lookup {
  return { nx: false, answers, additionals: [] };
}

function cnameTarget(a: Answer): string {
  return a.type === 'CNAME' ? a.data : '';
}

function sameName(a: Labels, b: Labels): boolean {
  return a.length === b.length && a.every((l, i) => l === b[i]);
}

function portsOf(ports: readonly { name?: string; port?: number; protocol?: string }[] | undefined): Port[] {
  if (ports === undefined || ports.length === 0) return [NO_PORT];
  return ports.map((p) => ({ name: p.name ?? '', port: p.port ?? -1, protocol: p.protocol ?? 'TCP' }));
}

/** What the plugin keeps of a Service (`object/service.go` `ToService`). */
function serviceRecord(s: V1Service): ServiceRecord | undefined {
  const name = s.metadata?.name;
  const namespace = s.metadata?.namespace;
  if (name === undefined || namespace === undefined) return undefined;
  const spec = s.spec ?? {};
  const ips = spec.clusterIPs !== undefined && spec.clusterIPs.length > 0 ? spec.clusterIPs : [spec.clusterIP ?? ''];
  return {
    name,
    namespace,
    type: spec.type ?? 'ClusterIP',
    externalName: (spec.externalName ?? '').replace(/\.$/, ''),
    clusterIps: ips.map((ip) => canonicalIp(ip) ?? ip),
    headless: ips[0] === 'None',
    ports: portsOf(spec.ports),
  };
}

/**
 * What the plugin keeps of an EndpointSlice (`object/endpoint.go` `EndpointSliceToEndpoints`): its Service, ports
 * and ready addresses (an endpoint whose `ready` is unset counts as ready). A slice without a Service is of no name.
 */
function sliceRecord(s: V1EndpointSlice): SliceRecord | undefined {
  const namespace = s.metadata?.namespace;
  const service = s.metadata?.labels?.[SERVICE_NAME_LABEL];
  if (namespace === undefined || service === undefined || service === '') return undefined;
  return {
    namespace,
    service,
    ports: portsOf(s.ports),
    addresses: (s.endpoints ?? [])
      .filter((e) => e.conditions?.ready !== false)
      .flatMap((e) =>
        (e.addresses ?? []).filter((ip) => isIP(ip) !== 0).map((ip) => ({ ip, hostname: e.hostname ?? undefined })),
      ),
  };
}
