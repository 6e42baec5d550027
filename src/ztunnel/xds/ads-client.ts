import * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { EventEmitter } from 'node:events';
import { Counter, type Registry as MetricsRegistry } from 'prom-client';
import type { DeltaDiscoveryResponse } from '../../api/envoy/service/discovery/v3/discovery_pb.js';
import { AggregatedDiscoveryService } from '../../api/envoy/service/discovery/v3/discovery_pb.js';
import { Backoff } from '../../lib/backoff.js';
import { describeError } from '../../lib/errors.js';
import { controlPlaneMetadata, grpcClient, readRootCa } from '../../lib/grpc-channel.js';
import type { GrpcHeaders, NodeMetadataValue } from '../config.js';
import type { LocalConfig, LocalWorkload } from '../state/local-config.js';
import type { Authorization } from '../state/policy.js';
import type { Service } from '../state/service.js';
import { addressFromXds, authorizationFromXds } from '../state/convert.js';

export const ADDRESS_TYPE = 'type.googleapis.com/istio.workload.Address';
export const AUTHORIZATION_TYPE = 'type.googleapis.com/istio.security.Authorization';
/** Subscription order on every (re)connect (spec §3.1). */
const TYPES = [ADDRESS_TYPE, AUTHORIZATION_TYPE] as const;

/** Reconnect backoff: 10ms doubling to 15s; streams istiod ends on purpose reconnect at once (ztunnel src/xds/client.rs). */
const BACKOFF_INITIAL_MS = 10;
const BACKOFF_MAX_MS = 15_000;

type Held = { readonly version: string } & ({ readonly workload: LocalWorkload } | { readonly service: Service } | { readonly policy: Authorization });

export interface AdsClientOptions {
  readonly address: string;
  /** A PEM file path, the PEM itself, or SYSTEM. */
  readonly rootCa: string;
  readonly tokenFile: string;
  readonly clusterId: string;
  readonly altHostname: string | undefined;
  /** XDS_HEADER_* metadata. */
  readonly headers: GrpcHeaders;
  readonly node: { readonly id: string; readonly metadata: Readonly<Record<string, NodeMetadataValue>> };
}

type ClientState = { t: 'connecting' } | { t: 'streaming'; call: grpc.ClientDuplexStream<unknown, DeltaDiscoveryResponse>; answered: boolean } | { t: 'backoff'; timer: NodeJS.Timeout } | { t: 'stopped' };

/**
 * ztunnel's delta ADS client (spec §3.1): wildcard subscriptions for Address then Authorization, the node sent on
 * the initial requests, `initial_resource_versions` of everything still held on reconnect, per-resource rejects in
 * a NACK (good resources in the same response still apply), removals, and reconnect with backoff. The state it
 * holds survives istiod outages: ztunnel keeps serving with what it has. Emits `connected` when istiod answers the
 * first request of a new stream: the control plane is reachable again.
 */
export class AdsClient extends EventEmitter<{ connected: [] }> {
  private state: ClientState = { t: 'connecting' };
  private readonly held = new Map<string, Map<string, Held>>(TYPES.map((t) => [t, new Map()]));
  private readonly acked = new Set<string>();
  private readonly backoff = new Backoff(BACKOFF_INITIAL_MS, BACKOFF_MAX_MS);
  private client: grpc.Client | undefined;
  private readonly metrics: { terminations: Counter<'reason'>; messages: Counter<'url'> };

  constructor(
    private readonly o: AdsClientOptions,
    private readonly apply: (cfg: LocalConfig) => void,
    metrics: MetricsRegistry,
    private readonly log: Logger,
  ) {
    super();
    const registers = [metrics];
    this.metrics = {
      terminations: new Counter({ name: 'istio_xds_connection_terminations_total', help: 'The total number of completed connections to xds server (unstable)', labelNames: ['reason'], registers }),
      messages: new Counter({ name: 'istio_xds_message_total', help: 'Total number of messages received (unstable)', labelNames: ['url'], registers }),
    };
  }

  /** Types not yet ACKed once; readiness waits for both (spec §3.1). */
  pending(): string[] {
    return TYPES.filter((t) => !this.acked.has(t)).map((t) => `xds ${t.slice(t.lastIndexOf('/') + 1)}`);
  }

  async start(): Promise<void> {
    const root = await readRootCa(this.o.rootCa, 'XDS_ROOT_CA');
    this.client = grpcClient(AggregatedDiscoveryService, this.o.address, root, this.o.altHostname);
    void this.connect();
  }

  stop(): void {
    const s = this.state;
    this.state = { t: 'stopped' };
    if (s.t === 'backoff') clearTimeout(s.timer);
    if (s.t === 'streaming') s.call.cancel();
    this.client?.close();
  }

  /** Re-reads the state after an await (TypeScript keeps the narrowing from before it). */
  private stopped(): boolean {
    return this.state.t === 'stopped';
  }

  private transition(next: ClientState): void {
    if (this.state.t === 'stopped') return;
    this.log.debug({ from: this.state.t, to: next.t }, 'xds client state');
    this.state = next;
  }

  private async connect(): Promise<void> {
    if (this.state.t === 'stopped' || this.client === undefined) return;
    this.transition({ t: 'connecting' });
    let md: grpc.Metadata;
    try {
      md = await controlPlaneMetadata(this.o.tokenFile, this.o.clusterId, this.o.headers);
    } catch (e) {
      this.retry(describeError(e), true);
      return;
    }
    const method = (this.client as unknown as Record<string, (md: grpc.Metadata) => grpc.ClientDuplexStream<unknown, DeltaDiscoveryResponse>>)['deltaAggregatedResources']!;
    const call = method.call(this.client, md);
    if (this.stopped()) {
      call.cancel();
      return;
    }
    this.transition({ t: 'streaming', call, answered: false });
    let ended = false;
    const end = (reason: string, error?: grpc.ServiceError): void => {
      if (ended) return;
      ended = true;
      if (this.state.t === 'stopped') return;
      // istiod ends streams on purpose (max connection age, restarts): reconnect at once, else back off.
      const benign = error === undefined || error.code === grpc.status.CANCELLED || (error.code === grpc.status.UNAVAILABLE && /transport is closing|goaway/i.test(error.details));
      this.metrics.terminations.inc({ reason: error === undefined ? 'Complete' : benign ? 'Reconnect' : 'Error' });
      this.retry(reason, !benign);
    };
    call.on('data', (res: DeltaDiscoveryResponse) => this.onResponse(call, res));
    call.on('error', (e: grpc.ServiceError) => end(`xDS stream failed: ${grpc.status[e.code]}: ${e.details}`, e));
    call.on('end', () => end('xDS stream closed by istiod'));
    TYPES.forEach((typeUrl, i) => {
      const versions = Object.fromEntries([...this.held.get(typeUrl)!].map(([name, h]) => [name, h.version]));
      call.write({ typeUrl, initialResourceVersions: versions, ...(i === 0 ? { node: { id: this.o.node.id, metadata: { ...this.o.node.metadata } } } : {}) });
    });
  }

  private retry(reason: string, backoff: boolean): void {
    if (this.state.t === 'stopped') return;
    const delay = backoff ? this.backoff.next() : BACKOFF_INITIAL_MS;
    this.log.warn({ reason, retryInMs: delay }, 'xDS connection lost; serving with the last known config');
    // Not unref'd: until the first config arrives, this timer is what keeps ztunnel running.
    const timer = setTimeout(() => void this.connect(), delay);
    this.transition({ t: 'backoff', timer });
  }

  private onResponse(call: grpc.ClientDuplexStream<unknown, DeltaDiscoveryResponse>, res: DeltaDiscoveryResponse): void {
    this.metrics.messages.inc({ url: res.typeUrl });
    if (this.state.t === 'streaming' && this.state.call === call && !this.state.answered) {
      this.state.answered = true;
      this.log.info({ address: this.o.address }, 'xDS stream established');
      this.emit('connected');
    }
    const held = this.held.get(res.typeUrl);
    if (held === undefined) {
      call.write({ typeUrl: res.typeUrl, responseNonce: res.nonce, errorDetail: { code: grpc.status.UNIMPLEMENTED, message: `ztunnel does not handle ${res.typeUrl}` } });
      return;
    }
    const rejects: string[] = [];
    for (const r of res.resources) {
      if (res.typeUrl === ADDRESS_TYPE) {
        const c = addressFromXds(r.name, r.resource);
        if ('rejected' in c) rejects.push(`${r.name}: ${c.rejected}`);
        else held.set(r.name, { version: r.version, ...c });
      } else {
        // A rejected policy is held as its fail-closed stand-in (see authorizationFromXds).
        const c = authorizationFromXds(r.name, r.resource);
        if (c.rejected !== undefined) rejects.push(`${r.name}: ${c.rejected}`);
        held.set(r.name, { version: r.version, policy: c.policy });
      }
    }
    for (const name of res.removedResources) held.delete(name);
    this.apply(this.snapshot());
    this.backoff.reset();
    if (rejects.length > 0) {
      this.log.warn({ typeUrl: res.typeUrl, rejects }, 'rejected resources (NACK); the rest of the response is applied');
      call.write({ typeUrl: res.typeUrl, responseNonce: res.nonce, errorDetail: { code: grpc.status.INVALID_ARGUMENT, message: rejects.join('; ') } });
    } else {
      call.write({ typeUrl: res.typeUrl, responseNonce: res.nonce });
    }
    this.acked.add(res.typeUrl);
  }

  /** Everything held, in the local-config shape ProxyState applies. */
  private snapshot(): LocalConfig {
    const workloads: LocalWorkload[] = [];
    const services: Service[] = [];
    for (const h of this.held.get(ADDRESS_TYPE)!.values()) {
      if ('workload' in h) workloads.push(h.workload);
      else if ('service' in h) services.push(h.service);
    }
    const policies: Authorization[] = [];
    for (const h of this.held.get(AUTHORIZATION_TYPE)!.values()) if ('policy' in h) policies.push(h.policy);
    return { workloads, services, policies };
  }
}
