import * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { EventEmitter } from 'node:events';
import type { Any } from '@bufbuild/protobuf/wkt';
import { Counter, type MetricsRegistry } from '../admin/prom-client-core.js';
import type { DeltaDiscoveryResponse } from '../../api/envoy/service/discovery/v3/discovery_pb.js';
import { AggregatedDiscoveryService } from '../../api/envoy/service/discovery/v3/discovery_pb.js';
import { Backoff } from '../../lib/backoff.js';
import { describeError } from '../../lib/errors.js';
import { controlPlaneMetadata, grpcClient, readRootCa } from '../grpc-channel.js';
import type { TypedClient } from '../../lib/grpc-typed-client.js';
import type { GrpcHeaders, NodeMetadataValue } from '../config.js';
import type { LocalWorkload } from '../state/local-config.js';
import { policyKey, type Authorization } from '../state/policy.js';
import { serviceKey, type Service } from '../state/service.js';
import type { StateDelta } from '../state/proxy-state.js';
import { addressFromXds, authorizationFromXds } from '../state/convert.js';

export const ADDRESS_TYPE = 'type.googleapis.com/istio.workload.Address';
export const AUTHORIZATION_TYPE = 'type.googleapis.com/istio.security.Authorization';
/** Subscription order on every (re)connect (ztunnel `src/xds/client.rs`). */
const TYPES = [ADDRESS_TYPE, AUTHORIZATION_TYPE] as const;

/** Reconnect backoff: 10ms doubling to 15s; streams istiod ends on purpose reconnect at once (ztunnel src/xds/client.rs). */
const BACKOFF_INITIAL_MS = 10;
const BACKOFF_MAX_MS = 15_000;

/** istio_xds_connection_terminations_total's reason for a stream that ended with `error` (none: it completed). */
function terminationReason(error: grpc.ServiceError | undefined, benign: boolean): string {
  if (error === undefined) return 'Complete';
  return benign ? 'Reconnect' : 'Error';
}

/** What a resource name stands for in the state: its version, and the kind and key it was applied under. */
interface Held {
  readonly version: string;
  readonly kind: 'workload' | 'service' | 'policy';
  readonly key: string;
}

/** One response's upserts and removals, gathered into the delta ProxyState applies. */
interface DeltaBuilder {
  readonly workloads: LocalWorkload[];
  readonly services: Service[];
  readonly policies: Authorization[];
  readonly removedWorkloads: string[];
  readonly removedServices: string[];
  readonly removedPolicies: string[];
}

const REMOVALS = { workload: 'removedWorkloads', service: 'removedServices', policy: 'removedPolicies' } as const;

/**
 * A type that a proxy built on ztunnel's parts subscribes to by name, besides ztunnel's own (the waypoint's
 * `amesh.waypoint.v1.Waypoint`). `apply` takes one response's upserts and removals and says why it rejected any.
 */
export interface NamedSubscription {
  readonly typeUrl: string;
  /** Read on each (re)connect, and again when the subscription says its names changed. */
  readonly names: readonly string[];
  /** Given a function to call when `names` changed (a gateway's certificates follow its listeners). */
  readonly watch?: (namesChanged: () => void) => void;
  readonly apply: (
    resources: readonly { readonly name: string; readonly resource: Any | undefined }[],
    removed: readonly string[],
  ) => string[];
}

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
  readonly subscriptions?: readonly NamedSubscription[] | undefined;
}

type Client = TypedClient<typeof AggregatedDiscoveryService>;
/** A delta ADS stream (`DeltaAggregatedResources`). */
type DeltaStream = ReturnType<Client['deltaAggregatedResources']>;

type ClientState =
  | { t: 'connecting' }
  | { t: 'streaming'; call: DeltaStream; answered: boolean }
  | { t: 'backoff'; timer: NodeJS.Timeout }
  | { t: 'stopped' };

/**
 * ztunnel's delta ADS client (ztunnel `src/xds/client.rs`): wildcard subscriptions for Address then Authorization, the node sent on
 * the initial requests, `initial_resource_versions` of everything still held on reconnect, per-resource rejects in
 * a NACK (good resources in the same response still apply), removals, and reconnect with backoff. The state it
 * holds survives istiod outages: ztunnel keeps serving with what it has. Each response is applied as a delta: only the
 * resources it upserts or removes change in the state (ztunnel `src/xds.rs` `ProxyStateUpdater`). Emits `connected` when istiod answers the
 * first request of a new stream: the control plane is reachable again.
 */
export class AdsClient extends EventEmitter<{ connected: [] }> {
  private state: ClientState = { t: 'connecting' };
  private readonly held = new Map<string, Map<string, Held>>(TYPES.map((t) => [t, new Map()]));
  /** The named subscriptions by type, and the version held of each of their names. */
  private readonly named: ReadonlyMap<string, { sub: NamedSubscription; held: Map<string, string> }>;
  /** The names of each named subscription as last sent on the current stream. */
  private readonly subscribed = new Map<string, Set<string>>();
  private readonly acked = new Set<string>();
  private readonly backoff = new Backoff(BACKOFF_INITIAL_MS, BACKOFF_MAX_MS);
  private client: Client | undefined;
  private readonly metrics: { terminations: Counter<'reason'>; messages: Counter<'url'> };

  constructor(
    private readonly o: AdsClientOptions,
    private readonly update: (delta: StateDelta) => void,
    metrics: MetricsRegistry,
    private readonly log: Logger,
  ) {
    super();
    this.named = new Map((o.subscriptions ?? []).map((sub) => [sub.typeUrl, { sub, held: new Map() }]));
    for (const [typeUrl, { sub }] of this.named) sub.watch?.(() => this.resubscribe(typeUrl));
    const registers = [metrics];
    this.metrics = {
      terminations: new Counter({
        name: 'istio_xds_connection_terminations_total',
        help: 'The total number of completed connections to xds server (unstable)',
        labelNames: ['reason'],
        registers,
      }),
      messages: new Counter({
        name: 'istio_xds_message_total',
        help: 'Total number of messages received (unstable)',
        labelNames: ['url'],
        registers,
      }),
    };
  }

  /** Types not yet ACKed once; readiness waits for both (ztunnel `src/xds/client.rs`). */
  pending(): string[] {
    return [...TYPES, ...this.named.keys()]
      .filter((t) => !this.acked.has(t))
      .map((t) => `xds ${t.slice(t.lastIndexOf('/') + 1)}`);
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
    const call = this.client.deltaAggregatedResources(md);
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
      const benign =
        error === undefined ||
        error.code === grpc.status.CANCELLED ||
        (error.code === grpc.status.UNAVAILABLE && /transport is closing|goaway/i.test(error.details));
      this.metrics.terminations.inc({ reason: terminationReason(error, benign) });
      this.retry(reason, !benign);
    };
    call.on('data', (res: DeltaDiscoveryResponse) => this.onResponse(call, res));
    call.on('error', (e: grpc.ServiceError) => end(`xDS stream failed: ${grpc.status[e.code]}: ${e.details}`, e));
    call.on('end', () => end('xDS stream closed by istiod'));
    TYPES.forEach((typeUrl, i) => {
      const versions = Object.fromEntries([...this.held.get(typeUrl)!].map(([name, h]) => [name, h.version]));
      call.write({
        typeUrl,
        initialResourceVersions: versions,
        ...(i === 0 ? { node: { id: this.o.node.id, metadata: { ...this.o.node.metadata } } } : {}),
      });
    });
    for (const [typeUrl, { sub, held }] of this.named) {
      this.subscribed.set(typeUrl, new Set(sub.names));
      call.write({
        typeUrl,
        resourceNamesSubscribe: [...sub.names],
        initialResourceVersions: Object.fromEntries([...held].filter(([n]) => sub.names.includes(n))),
      });
    }
  }

  /** Tells istiod what a named subscription now wants: the names it gained and lost since the last request. */
  private resubscribe(typeUrl: string): void {
    const named = this.named.get(typeUrl);
    const had = this.subscribed.get(typeUrl);
    if (named === undefined || had === undefined || this.state.t !== 'streaming') return;
    const want = new Set(named.sub.names);
    const add = [...want].filter((n) => !had.has(n));
    const drop = [...had].filter((n) => !want.has(n));
    if (add.length === 0 && drop.length === 0) return;
    for (const n of drop) named.held.delete(n);
    this.subscribed.set(typeUrl, want);
    this.state.call.write({ typeUrl, resourceNamesSubscribe: add, resourceNamesUnsubscribe: drop });
  }

  private retry(reason: string, backoff: boolean): void {
    if (this.state.t === 'stopped') return;
    const delay = backoff ? this.backoff.next() : BACKOFF_INITIAL_MS;
    this.log.warn({ reason, retryInMs: delay }, 'xDS connection lost; serving with the last known config');
    // Not unref'd: until the first config arrives, this timer is what keeps ztunnel running.
    const timer = setTimeout(() => void this.connect(), delay);
    this.transition({ t: 'backoff', timer });
  }

  private onResponse(call: DeltaStream, res: DeltaDiscoveryResponse): void {
    this.metrics.messages.inc({ url: res.typeUrl });
    if (this.state.t === 'streaming' && this.state.call === call && !this.state.answered) {
      this.state.answered = true;
      this.log.info({ address: this.o.address }, 'xDS stream established');
      this.emit('connected');
    }
    const named = this.named.get(res.typeUrl);
    if (named !== undefined) {
      for (const r of res.resources) named.held.set(r.name, r.version);
      for (const n of res.removedResources) named.held.delete(n);
      const rejects = named.sub.apply(
        res.resources.map((r) => ({ name: r.name, resource: r.resource })),
        res.removedResources,
      );
      this.answer(call, res, rejects);
      return;
    }
    const held = this.held.get(res.typeUrl);
    if (held === undefined) {
      call.write({
        typeUrl: res.typeUrl,
        responseNonce: res.nonce,
        errorDetail: { code: grpc.status.UNIMPLEMENTED, message: `ztunnel does not handle ${res.typeUrl}` },
      });
      return;
    }
    const rejects: string[] = [];
    const delta: DeltaBuilder = {
      workloads: [],
      services: [],
      policies: [],
      removedWorkloads: [],
      removedServices: [],
      removedPolicies: [],
    };
    // A name that now stands for another key (or kind) first gives up the old one.
    const hold = (name: string, h: Held): void => {
      const prev = held.get(name);
      if (prev !== undefined && (prev.kind !== h.kind || prev.key !== h.key)) delta[REMOVALS[prev.kind]].push(prev.key);
      held.set(name, h);
    };
    for (const r of res.resources) {
      if (res.typeUrl === ADDRESS_TYPE) {
        // A rejected Address leaves what was held under its name in force, as ztunnel does.
        const c = addressFromXds(r.name, r.resource);
        if ('rejected' in c) {
          rejects.push(`${r.name}: ${c.rejected}`);
        } else if ('workload' in c) {
          hold(r.name, { version: r.version, kind: 'workload', key: c.workload.workload.uid });
          delta.workloads.push(c.workload);
        } else {
          hold(r.name, { version: r.version, kind: 'service', key: serviceKey(c.service) });
          delta.services.push(c.service);
        }
      } else {
        // A rejected policy is held as its fail-closed stand-in (see authorizationFromXds).
        const c = authorizationFromXds(r.name, r.resource);
        if (c.rejected !== undefined) rejects.push(`${r.name}: ${c.rejected}`);
        hold(r.name, { version: r.version, kind: 'policy', key: policyKey(c.policy) });
        delta.policies.push(c.policy);
      }
    }
    for (const name of res.removedResources) {
      const prev = held.get(name);
      if (prev === undefined) continue;
      held.delete(name);
      delta[REMOVALS[prev.kind]].push(prev.key);
    }
    this.update(delta);
    this.answer(call, res, rejects);
  }

  /** ACKs a response, or NACKs it naming the rejected resources (the rest of it was applied). */
  private answer(call: DeltaStream, res: DeltaDiscoveryResponse, rejects: readonly string[]): void {
    this.backoff.reset();
    if (rejects.length > 0) {
      this.log.warn(
        { typeUrl: res.typeUrl, rejects },
        'rejected resources (NACK); the rest of the response is applied',
      );
      call.write({
        typeUrl: res.typeUrl,
        responseNonce: res.nonce,
        errorDetail: { code: grpc.status.INVALID_ARGUMENT, message: rejects.join('; ') },
      });
    } else {
      call.write({ typeUrl: res.typeUrl, responseNonce: res.nonce });
    }
    this.acked.add(res.typeUrl);
  }
}
