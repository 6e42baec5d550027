import { randomBytes } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { Counter, Gauge, type Registry as MetricsRegistry } from 'prom-client';
import type { MessageInitShape } from '@bufbuild/protobuf';
import type {
  DeltaDiscoveryRequest,
  DeltaDiscoveryResponseSchema,
} from '../../api/envoy/service/discovery/v3/discovery_pb.js';
import { describeError } from '../../lib/errors.js';
import type { Caller, CallerAuthenticator } from '../ca/authenticate.js';
import { AUTHENTICATION_FAILURE, authenticatedCaller } from '../ca/authentication-interceptor.js';
import { ADDRESS_TYPE, AUTHORIZATION_TYPE, type XdsResource } from './convert.js';
import { WAYPOINT_TYPE } from './waypoint-resource.js';
import { SECRET_TYPE, type CallerGenerator } from './secret-generator.js';

export const SUPPORTED_TYPES = [ADDRESS_TYPE, AUTHORIZATION_TYPE, WAYPOINT_TYPE, SECRET_TYPE] as const;
/** Types served only by name, each name only to callers of the namespace it begins with (`namespace/name`). */
const NAMESPACED_TYPES: ReadonlySet<string> = new Set([WAYPOINT_TYPE]);
export type Snapshot = ReadonlyMap<string, ReadonlyMap<string, XdsResource>>;

type Stream = grpc.ServerDuplexStream<DeltaDiscoveryRequest, MessageInitShape<typeof DeltaDiscoveryResponseSchema>>;

interface TypeState {
  /** What the client holds, as far as we know: name → version. */
  readonly sent: Map<string, string>;
  lastNonce: string;
  acked: boolean;
  lastNack: string | undefined;
  /** Names the client asked for by name since the last response: re-sent (or reported removed) even if unchanged. */
  readonly requested: Set<string>;
  /** A (re)subscription is answered even when there is nothing to send. */
  answerDue: boolean;
  /** The names subscribed to; undefined: a wildcard subscription (every resource of the type). */
  readonly names: Set<string> | undefined;
  /** A type served per caller: the names the client asked for, of which `names` holds those it may have. */
  readonly wanted?: Set<string>;
  /** The latest authorization of `wanted` started: an answer to an earlier one is stale and dropped. */
  authorizing?: number;
}

interface Connection {
  readonly id: string;
  readonly caller: Caller;
  readonly stream: Stream;
  readonly connectedAt: string;
  nodeId: string;
  readonly types: Map<string, TypeState>;
  /** The stream's write buffer is full: pushes wait for 'drain' and then go out as one diff per type. */
  blocked: boolean;
}

/**
 * Delta ADS (ztunnel `src/xds/client.rs`, istio `pilot/pkg/xds/delta.go`): wildcard subscriptions to Address and
 * Authorization, the Bearer token on the stream, nonces with ACK/NACK, `initial_resource_versions` so a
 * reconnecting client is not re-sent what it holds, and per-connection pushes of only what changed (upserts by
 * version, removals by name).
 *
 * Types a `CallerGenerator` serves (SDS Secrets) are answered per caller: each name the client subscribes to is
 * authorized first (again whenever the model changes, so that a withdrawn permission takes the name away), and the
 * resource is built for that caller.
 *
 * Bounded per connection: a client that stops reading is not written to until its stream drains, and the
 * changes meanwhile go out as one diff; a spontaneous request on a type already subscribed is answered only
 * for the names it subscribes, as istiod's shouldRespondDelta does, so a client looping on subscriptions
 * cannot make istiod build and queue full pushes.
 */
export class AdsServer {
  /** Undefined until the first `update`: subscriptions before it are answered then, never with a partial mesh. */
  private snapshot: Snapshot | undefined;
  private readonly conns = new Set<Connection>();
  private nextId = 1;
  private readonly metrics: { connected: Gauge; pushes: Counter<'type'>; rejects: Counter<'type_url'> };

  constructor(
    private readonly auth: CallerAuthenticator,
    metrics: MetricsRegistry,
    private readonly log: Logger,
    private readonly generators: ReadonlyMap<string, CallerGenerator> = new Map(),
  ) {
    const registers = [metrics];
    this.metrics = {
      connected: new Gauge({
        name: 'pilot_xds',
        help: 'Number of endpoints connected to this pilot using XDS.',
        registers,
      }),
      pushes: new Counter({
        name: 'pilot_xds_pushes',
        help: 'Pilot build and send errors for lds, rds, cds and eds.',
        labelNames: ['type'],
        registers,
      }),
      rejects: new Counter({
        name: 'pilot_total_xds_rejects',
        help: 'Total number of XDS responses from pilot rejected by proxy.',
        labelNames: ['type_url'],
        registers,
      }),
    };
  }

  readonly handlers = {
    deltaAggregatedResources: (stream: Stream): void => {
      void this.accept(stream);
    },
  };

  /**
   * Installs a new snapshot and pushes the differences to every connection. `touched`, when given, names per type
   * every resource that may differ from the previous snapshot: only those are compared, so a change to one object
   * costs that object rather than the mesh. A connection that missed a push (its stream was full, or its
   * subscription is not answered yet) is compared in full.
   */
  update(snapshot: Snapshot, touched?: ReadonlyMap<string, ReadonlySet<string>>): void {
    const first = this.snapshot === undefined;
    this.snapshot = snapshot;
    // Waypoints hear first of the routes and policies that come with a new binding, before ztunnels send them traffic.
    for (const waypointsFirst of [true, false])
      for (const c of this.conns)
        for (const [typeUrl, st] of c.types)
          if ((typeUrl === WAYPOINT_TYPE) === waypointsFirst && !this.generators.has(typeUrl))
            this.push(c, typeUrl, st, first || touched === undefined ? undefined : (touched.get(typeUrl) ?? new Set()));
    for (const c of this.conns) for (const typeUrl of this.generators.keys()) this.reauthorize(c, typeUrl);
  }

  /** Pushes what a generator's resources now say (a Secret changed) to every connection subscribed to its type. */
  refresh(typeUrl: string): void {
    for (const c of this.conns) {
      const st = c.types.get(typeUrl);
      if (st !== undefined) this.push(c, typeUrl, st);
    }
  }

  /** Authorizes again what a connection asked for of a generator's type, and pushes what that changes. */
  private reauthorize(c: Connection, typeUrl: string, added: readonly string[] = []): void {
    const st = c.types.get(typeUrl);
    const gen = this.generators.get(typeUrl);
    if (st?.wanted === undefined || st.names === undefined || gen === undefined) return;
    for (const n of added) st.wanted.add(n);
    const asked = [...st.wanted];
    const seq = (st.authorizing = (st.authorizing ?? 0) + 1);
    void gen.authorize(c.caller, c.id, asked).then(
      (allowed) => {
        if (!this.conns.has(c) || st.authorizing !== seq) return;
        st.names!.clear();
        for (const n of allowed) if (st.wanted!.has(n)) st.names!.add(n);
        this.push(c, typeUrl, st);
      },
      (e: unknown) =>
        this.log.error({ connection: c.id, typeUrl, error: describeError(e) }, 'authorizing names failed'),
    );
  }

  /** `/debug/connections`: who is connected and what each was last sent. */
  debug(): object[] {
    return [...this.conns].map((c) => ({
      connectionId: c.id,
      node: c.nodeId,
      caller: `${c.caller.namespace}/${c.caller.serviceAccount}`,
      connectedAt: c.connectedAt,
      blocked: c.blocked,
      types: Object.fromEntries(
        [...c.types].map(([t, s]) => [
          t,
          {
            acked: s.acked,
            lastNonce: s.lastNonce,
            lastNack: s.lastNack,
            resources: Object.fromEntries([...s.sent].sort()),
          },
        ]),
      ),
    }));
  }

  private async accept(stream: Stream): Promise<void> {
    let caller: Caller;
    try {
      caller = await authenticatedCaller(this.auth, stream.metadata);
    } catch (e) {
      this.log.warn({ error: describeError(e) }, 'xDS connection refused');
      stream.emit('error', { code: grpc.status.UNAUTHENTICATED, details: AUTHENTICATION_FAILURE });
      return;
    }
    const c: Connection = {
      id: `ztunnel-${this.nextId++}`,
      caller,
      stream,
      connectedAt: new Date().toISOString(),
      nodeId: '',
      types: new Map(),
      blocked: false,
    };
    this.conns.add(c);
    this.metrics.connected.set(this.conns.size);
    this.log.info({ connection: c.id, caller: `${caller.namespace}/${caller.serviceAccount}` }, 'xDS client connected');
    const done = (): void => {
      if (!this.conns.delete(c)) return;
      this.metrics.connected.set(this.conns.size);
      this.log.info({ connection: c.id, node: c.nodeId }, 'xDS client disconnected');
    };
    stream.on('data', (req: DeltaDiscoveryRequest) => this.onRequest(c, req));
    stream.on('drain', () => {
      c.blocked = false;
      for (const [typeUrl, st] of c.types) this.push(c, typeUrl, st);
    });
    stream.on('end', () => {
      done();
      stream.end();
    });
    stream.on('error', done);
    stream.on('cancelled', done);
  }

  private onRequest(c: Connection, req: DeltaDiscoveryRequest): void {
    if (req.node !== undefined && req.node.id !== '') c.nodeId = req.node.id;
    const typeUrl = req.typeUrl;
    if (!(SUPPORTED_TYPES as readonly string[]).includes(typeUrl)) {
      this.log.warn({ connection: c.id, typeUrl }, 'ignoring a request for a type istiod does not serve to ztunnel');
      return;
    }
    const st = c.types.get(typeUrl);
    const generated = this.generators.has(typeUrl);
    const namespaced = NAMESPACED_TYPES.has(typeUrl);
    const subscribe = namespaced ? this.permitted(c, typeUrl, req.resourceNamesSubscribe) : req.resourceNamesSubscribe;
    if (generated && st?.wanted !== undefined) {
      for (const n of req.resourceNamesUnsubscribe) {
        st.wanted.delete(n);
        st.names?.delete(n);
      }
      if (req.responseNonce === '' || subscribe.length > 0 || req.resourceNamesUnsubscribe.length > 0) {
        st.answerDue ||= req.responseNonce === '';
        this.reauthorize(c, typeUrl, subscribe);
      }
    }
    if (generated && st !== undefined && req.responseNonce === '') return;
    if (st?.names !== undefined && !generated) {
      for (const n of subscribe) st.names.add(n);
      for (const n of req.resourceNamesUnsubscribe) st.names.delete(n);
    }
    if (st !== undefined && req.responseNonce !== '') {
      // ACK or NACK of an earlier response.
      if (req.responseNonce !== st.lastNonce) return; // stale: a newer response is in flight
      if (req.errorDetail !== undefined && req.errorDetail.message !== '') {
        st.lastNack = req.errorDetail.message;
        this.metrics.rejects.inc({ type_url: typeUrl });
        this.log.warn(
          { connection: c.id, node: c.nodeId, typeUrl, error: req.errorDetail.message },
          'ztunnel rejected (NACKed) resources',
        );
      } else {
        st.acked = true;
      }
      return;
    }
    if (st?.names !== undefined) {
      if (subscribe.length > 0 || req.resourceNamesUnsubscribe.length > 0) this.push(c, typeUrl, st);
      return;
    }
    if (st !== undefined) {
      // Spontaneous request on a subscribed type: only names subscribed by name are answered (on-demand lookups).
      if (req.resourceNamesSubscribe.length === 0) {
        this.log.debug({ connection: c.id, typeUrl }, 'spontaneous request without new names: nothing to answer');
        return;
      }
      for (const n of req.resourceNamesSubscribe) st.requested.add(n);
      this.push(c, typeUrl, st);
      return;
    }
    // The first subscription on this stream: trust what the client says it holds, then send everything else.
    const fresh: TypeState = {
      sent: new Map(Object.entries(req.initialResourceVersions)),
      lastNonce: '',
      acked: false,
      lastNack: undefined,
      requested: new Set(),
      answerDue: true,
      names:
        generated || namespaced || (subscribe.length > 0 && !subscribe.includes('*'))
          ? new Set(generated ? [] : subscribe)
          : undefined,
      ...(generated ? { wanted: new Set<string>() } : {}),
    };
    c.types.set(typeUrl, fresh);
    if (generated) this.reauthorize(c, typeUrl, subscribe);
    else this.push(c, typeUrl, fresh);
  }

  /**
   * The names of a namespaced type the caller may have: those in its own namespace (istio `pilot/pkg/xds`
   * authenticates a proxy to its namespace the same way). Others are refused in the log and never sent.
   */
  private permitted(c: Connection, typeUrl: string, names: readonly string[]): string[] {
    const own = `${c.caller.namespace}/`;
    const refused = names.filter((n) => !n.startsWith(own));
    if (refused.length > 0)
      this.log.warn(
        { connection: c.id, caller: `${c.caller.namespace}/${c.caller.serviceAccount}`, typeUrl, refused },
        'xDS subscription to resources of another namespace refused',
      );
    return names.filter((n) => n.startsWith(own));
  }

  /** Sends what `st` lacks of the snapshot; `only`: the names that may have changed since the last push. */
  private push(c: Connection, typeUrl: string, st: TypeState, only?: ReadonlySet<string>): void {
    if (c.blocked || this.snapshot === undefined) return;
    const gen = this.generators.get(typeUrl);
    const current: Pick<ReadonlyMap<string, XdsResource>, 'get' | 'has' | 'values'> = gen === undefined
      ? (this.snapshot.get(typeUrl) ?? new Map<string, XdsResource>())
      : {
          get: (n) => gen.resource(c.caller, n),
          has: (n) => gen.resource(c.caller, n) !== undefined,
          values: () => [][Symbol.iterator](),
        };
    const changed = new Set<XdsResource>();
    const removed: string[] = [];
    const compare = (name: string, r: XdsResource | undefined): void => {
      if (r !== undefined && st.sent.get(name) !== r.version) changed.add(r);
      else if (r === undefined && st.sent.has(name)) removed.push(name);
    };
    if (st.names !== undefined) {
      for (const n of st.names) compare(n, current.get(n));
      for (const n of st.sent.keys()) if (!st.names.has(n) && !removed.includes(n)) removed.push(n);
    } else if (only === undefined || st.answerDue) {
      for (const r of current.values()) compare(r.name, r);
      for (const n of st.sent.keys()) if (!current.has(n)) removed.push(n);
    } else {
      for (const n of only) compare(n, current.get(n));
    }
    for (const n of st.requested) {
      const r = current.get(n);
      if (r !== undefined) changed.add(r);
      else if (!st.sent.has(n) && !removed.includes(n)) removed.push(n);
    }
    if (!st.answerDue && changed.size === 0 && removed.length === 0) return;
    const nonce = randomBytes(8).toString('hex');
    for (const r of changed) st.sent.set(r.name, r.version);
    for (const n of removed) st.sent.delete(n);
    st.requested.clear();
    st.answerDue = false;
    st.lastNonce = nonce;
    this.metrics.pushes.inc({ type: typeUrl.slice(typeUrl.lastIndexOf('.') + 1) });
    const more = c.stream.write({
      typeUrl,
      nonce,
      systemVersionInfo: new Date().toISOString(),
      resources: [...changed].map((r) => ({ name: r.name, version: r.version, resource: r.resource })),
      removedResources: removed,
    });
    if (!more) c.blocked = true;
    this.log.debug(
      { connection: c.id, typeUrl, upserts: changed.size, removals: removed.length, nonce, blocked: c.blocked },
      'xDS push',
    );
  }
}
