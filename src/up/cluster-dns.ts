/**
 * The cluster's DNS server, behind `kube-system/kube-dns` as CoreDNS is on a kubeadm or kind cluster, serving what
 * kubeadm's Corefile serves (cmd/kubeadm/app/phases/addons/dns/manifests.go):
 *
 * - `kubernetes <domain> in-addr.arpa ip6.arpa { pods insecure; fallthrough in-addr.arpa ip6.arpa; ttl 30 }`:
 *   `ClusterDnsRecords`, fed by informers on Services, discovery.k8s.io/v1 EndpointSlices and Namespaces.
 * - `forward . /etc/resolv.conf { max_concurrent 1000 }`: every other name goes to the resolv.conf's nameservers
 *   (`DnsForwarder`, the response's authority section kept); over 1000 forwards at once a query is REFUSED, and
 *   when no nameserver answers it is SERVFAIL.
 * - `cache 30 { disable success <domain>; disable denial <domain> }` (`DnsAnswerCache`) and `loadbalance`
 *   (`roundRobin`).
 * - `ready` on 8181 (`/ready`: 200 once the informers synced, else 503 `kubernetes`), `health` on 8080
 *   (`/health`: 200), `prometheus :9153`.
 *
 * DNS is served over UDP and TCP on one address (`DnsTransport`): a UDP answer larger than the client takes is
 * truncated with TC set; a malformed message gets FORMERR or NOTIMP, or is dropped, and disturbs nothing else.
 */
import { setMaxListeners } from 'node:events';
import type http from 'node:http';
import type { AddressInfo } from 'node:net';
import { isIP } from 'node:net';
import { networkInterfaces } from 'node:os';
import { performance } from 'node:perf_hooks';
import type { KubeConfig, KubernetesObject, V1EndpointSlice, V1Namespace, V1Service } from '@kubernetes/client-node';
import { RECURSION_DESIRED, type Question } from 'dns-packet';
import { Registry } from 'prom-client';
import type { ListenAddress } from '../lib/address.js';
import { describeError, isMeshError, MeshError } from '../lib/errors.js';
import { boundPort, startHttpServer } from '../lib/http-server.js';
import { isLoopback } from '../lib/ip.js';
import type { LogControl, Logger } from '../lib/log.js';
import { SharedInformerFactory } from '../kube/shared-informer-factory.js';
import { DnsForwarder } from '../ztunnel/dns/dns-forwarder.js';
import { RCODE, type DnsAnswer, type DnsQuery } from '../ztunnel/dns/dns-message.js';
import type { DnsProtocol } from '../ztunnel/dns/dns-metrics.js';
import { hostDnsListen, hostUpstreamSockets } from '../ztunnel/dns/dns-sockets.js';
import { DnsTransport } from '../ztunnel/dns/dns-transport.js';
import type { UpstreamConfig } from '../ztunnel/dns/resolv-conf.js';
import { ClusterDnsMetrics, type ResponsePlugin } from './cluster-dns-metrics.js';
import { ClusterDnsRecords, type ClusterDnsResult } from './cluster-dns-records.js';
import { DnsAnswerCache } from './dns-answer-cache.js';
import { roundRobin } from './dns-round-robin.js';

/** kubeadm's `ttl 30`. */
const RECORD_TTL_SECONDS = 30;
/** kubeadm's `forward . /etc/resolv.conf { max_concurrent 1000 }`. */
const MAX_CONCURRENT_FORWARDS = 1000;
/** The lists the records come from, as the plugin's informers watch them. */
const SERVICES = '/api/v1/services';
const ENDPOINT_SLICES = '/apis/discovery.k8s.io/v1/endpointslices';
const NAMESPACES = '/api/v1/namespaces';
/** What the ready plugin answers while a plugin is not ready: the names of those that are not. */
const NOT_READY = 'kubernetes';

const SERVFAIL: DnsAnswer = { rcode: RCODE.SERVFAIL, authoritative: false, answers: [], additionals: [] };
/** What a client gets when its query could not go upstream: REFUSED over `max_concurrent`, else SERVFAIL. */
const FORWARD_FAILURES: Readonly<Record<'busy' | 'failed', DnsAnswer>> = {
  busy: { rcode: RCODE.REFUSED, authoritative: false, answers: [], additionals: [] },
  failed: SERVFAIL,
};

export interface ClusterDnsOptions {
  readonly kc: KubeConfig;
  /** UDP and TCP; the HTTP endpoints listen on its host. */
  readonly listen: ListenAddress;
  readonly clusterDomain: string;
  /** The nameservers names outside the cluster go to (`readResolvConf`). */
  readonly upstream: UpstreamConfig;
  /** The HTTP endpoints' ports: `/ready`, `/health`, `/metrics` (0: any). */
  readonly ports: { readonly ready: number; readonly health: number; readonly metrics: number };
  readonly logs: LogControl;
  /** Milliseconds since the epoch (the SOA serial, the cache's clock); Date.now unless a test moves time. */
  readonly now?: () => number;
}

/** Where a started server answers. */
export interface ClusterDnsAddresses {
  readonly dns: AddressInfo;
  readonly ready: number;
  readonly health: number;
  readonly metrics: number;
}

export class ClusterDns {
  private readonly records: ClusterDnsRecords;
  private readonly cache: DnsAnswerCache;
  private readonly forwarder: DnsForwarder;
  private readonly metrics: ClusterDnsMetrics;
  private readonly registry = new Registry();
  private readonly informers: SharedInformerFactory;
  private readonly transport: DnsTransport;
  private readonly http: http.Server[] = [];
  private readonly log: Logger;
  /** Cancels the forwards in flight when the server stops. */
  private readonly closing = new AbortController();
  private forwards = 0;
  private ready = false;
  private ports = { ready: 0, health: 0, metrics: 0 };
  /** Resolves once the informers have listed everything (then `/ready` is 200). */
  readonly synced: Promise<void>;

  private constructor(private readonly opts: ClusterDnsOptions) {
    const now = opts.now ?? Date.now;
    this.log = opts.logs.scope('dns');
    this.records = new ClusterDnsRecords({
      domain: opts.clusterDomain,
      ttl: RECORD_TTL_SECONDS,
      localIps: localAddresses(opts.listen.host),
      now,
    });
    this.cache = new DnsAnswerCache(opts.clusterDomain, now);
    this.forwarder = new DnsForwarder(opts.upstream, hostUpstreamSockets, { keepAuthorities: true });
    setMaxListeners(MAX_CONCURRENT_FORWARDS, this.closing.signal);
    const wildcard = opts.listen.host === '0.0.0.0' || opts.listen.host === '::';
    this.metrics = new ClusterDnsMetrics(
      this.registry,
      `dns://${wildcard ? '' : opts.listen.host}:${opts.listen.port}`,
      isIP(opts.listen.host) === 6 ? '2' : '1',
    );
    this.informers = new SharedInformerFactory(opts.kc, opts.logs.scope('informers'));
    const r = this.records;
    this.watch<V1Service>(
      SERVICES,
      'Service',
      (s) => r.setService(s),
      (s) => r.deleteService(s),
    );
    this.watch<V1EndpointSlice>(
      ENDPOINT_SLICES,
      'EndpointSlice',
      (s) => r.setEndpointSlice(s),
      (s) => r.deleteEndpointSlice(s),
    );
    this.watch<V1Namespace>(
      NAMESPACES,
      'Namespace',
      (n) => r.setNamespace(n),
      (n) => r.deleteNamespace(n),
    );
    this.transport = new DnsTransport({
      name: 'cluster DNS server',
      listen: hostDnsListen([opts.listen.host], opts.listen.port),
      resolve: (q, protocol) => this.resolve(q, protocol),
      codes: { badQuery: 'CLUSTER_DNS_ERR_BAD_QUERY', unencodable: 'CLUSTER_DNS_ERR_UPSTREAM' },
      log: this.log,
    });
    this.synced = Promise.all(
      [SERVICES, ENDPOINT_SLICES, NAMESPACES].map((path) => this.informers.informerFor(path).synced),
    ).then(() => {
      this.records.markSynced();
      this.ready = true;
      this.log.info({ server: opts.kc.getCurrentCluster()?.server }, 'informers synced; serving the cluster zone');
    });
  }

  /** Binds DNS and the HTTP endpoints, then starts the informers; rejects with nothing left listening. */
  static async start(opts: ClusterDnsOptions): Promise<ClusterDns> {
    const s = new ClusterDns(opts);
    try {
      await s.listen();
    } catch (e) {
      await s.stop();
      throw e;
    }
    s.informers.start();
    return s;
  }

  addresses(): ClusterDnsAddresses {
    const dns = this.transport.addresses().udp[0];
    if (dns === undefined) throw new MeshError('CLUSTER_DNS_ERR_BIND', 'the cluster DNS server is not listening');
    return { dns, ...this.ports };
  }

  /** Stops answering (`/ready` turns 503 first), cancels the forwards in flight and stops the informers. */
  async stop(): Promise<void> {
    this.ready = false;
    this.closing.abort();
    await this.transport.close();
    await this.informers.stop();
    await Promise.all(this.http.map((h) => new Promise((resolve) => h.close(resolve))));
  }

  /** Feeds the records from the informer of `path`, each event logged at debug. */
  private watch<T extends KubernetesObject>(
    path: string,
    kind: string,
    set: (o: T) => void,
    remove: (o: T) => void,
  ): void {
    const logged =
      (event: string, apply: (o: T) => void) =>
      (o: T): void => {
        apply(o);
        this.log.debug(
          { event, kind, object: `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}` },
          'cluster zone updated',
        );
      };
    this.informers
      .informerFor<T>(path)
      .addEventHandler({ add: logged('add', set), update: logged('update', set), delete: logged('delete', remove) });
  }

  private async listen(): Promise<void> {
    const { host } = this.opts.listen;
    try {
      await this.transport.start();
    } catch (e) {
      throw new MeshError(
        'CLUSTER_DNS_ERR_BIND',
        `cannot serve DNS on ${host}:${this.opts.listen.port}: ${describeError(isMeshError(e) ? (e.cause ?? e) : e)}`,
        { cause: e },
      );
    }
    const serve = async (
      port: number,
      what: string,
      path: string,
      route: () => Promise<{ status: number; body: string; type?: string }>,
    ): Promise<number> => {
      const h = await startHttpServer({ host, port }, { [path]: route }, what, `pass a different --${what}-port`);
      this.http.push(h);
      return boundPort(h);
    };
    this.ports = {
      ready: await serve(this.opts.ports.ready, 'ready', '/ready', () =>
        Promise.resolve(this.ready ? { status: 200, body: 'OK' } : { status: 503, body: NOT_READY }),
      ),
      health: await serve(this.opts.ports.health, 'health', '/health', () =>
        Promise.resolve({ status: 200, body: 'OK' }),
      ),
      metrics: await serve(this.opts.ports.metrics, 'metrics', '/metrics', async () => ({
        status: 200,
        body: await this.registry.metrics(),
        type: this.registry.contentType,
      })),
    };
  }

  /** The answer to one query, as the Corefile's plugins in their order make it (never rejects). */
  private async resolve(q: DnsQuery, protocol: DnsProtocol): Promise<DnsAnswer> {
    const started = performance.now();
    const { answer, plugin } = await this.lookup(q);
    const out = roundRobin(answer);
    this.metrics.record(q.question.type, protocol, out.rcode, plugin, (performance.now() - started) / 1000);
    return out;
  }

  private async lookup(q: DnsQuery): Promise<{ answer: DnsAnswer; plugin: ResponsePlugin }> {
    const cached = this.cache.get(q);
    if (cached !== undefined) return { answer: cached, plugin: 'cache' };
    const r = this.records.answer(q.question);
    if (r.kind === 'answer') return { answer: this.cache.put(q, r.answer), plugin: 'kubernetes' };
    if (r.kind === 'external') return { answer: this.cache.put(q, await this.complete(r)), plugin: 'kubernetes' };
    const forwarded = await this.forward(q.question);
    const answer = typeof forwarded === 'string' ? FORWARD_FAILURES[forwarded] : forwarded;
    return { answer: this.cache.put(q, answer), plugin: 'forward' };
  }

  /**
   * An ExternalName's CNAME chain with its target's records, which the plugin looks up through the server itself
   * (the cache, then upstream); with no answer from upstream, the name has no records (`unresolved`).
   */
  private async complete(r: Extract<ClusterDnsResult, { kind: 'external' }>): Promise<DnsAnswer> {
    const target: DnsQuery = { id: 0, question: r.target, echoFlags: RECURSION_DESIRED, edns: undefined };
    let upstream = this.cache.get(target);
    if (upstream === undefined) {
      const forwarded = await this.forward(r.target);
      if (typeof forwarded === 'string') return r.unresolved;
      upstream = this.cache.put(target, forwarded);
    }
    return { rcode: RCODE.NOERROR, authoritative: true, answers: [...r.chain, ...upstream.answers], additionals: [] };
  }

  /** The upstream's answer; `busy` when too many forwards are in flight, `failed` when no nameserver gave one. */
  private async forward(question: Question): Promise<DnsAnswer | 'busy' | 'failed'> {
    if (this.forwards >= MAX_CONCURRENT_FORWARDS) return 'busy';
    this.forwards++;
    try {
      return await this.forwarder.forward(question, this.closing.signal);
    } catch (e) {
      if (!this.closing.signal.aborted)
        this.log.warn(
          { code: 'CLUSTER_DNS_ERR_UPSTREAM', domain: question.name, type: question.type, error: describeError(e) },
          'no upstream nameserver answered',
        );
      return 'failed';
    } finally {
      this.forwards--;
    }
  }
}

/**
 * The addresses the kubernetes plugin takes as its own (coredns plugin/kubernetes `local.go` `boundIPs`): the
 * listen address, or every interface's when it is a wildcard; never a loopback one.
 */
function localAddresses(host: string): string[] {
  if (host !== '0.0.0.0' && host !== '::') return isLoopback(host) ? [] : [host];
  return Object.values(networkInterfaces())
    .flatMap((addrs) => addrs ?? [])
    .filter((a) => !a.internal && !isLoopback(a.address) && (host === '::' || a.family === 'IPv4'))
    .map((a) => a.address);
}
