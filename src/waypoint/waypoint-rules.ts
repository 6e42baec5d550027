/**
 * What istiod says this waypoint or ingress gateway enforces: its `amesh.waypoint.v1.Waypoint` resource
 * (docs/waypoint-xds.md), subscribed to by its workload's `namespace/name` and converted once per push into route
 * tables, policies and (a gateway) listeners. A
 * resource that cannot be decoded is NACKed and the waypoint then refuses every request (403) until a good one
 * comes: it never serves without the policies it was given. Until the first push it holds nothing (no routes, no
 * policies), as when istiod has nothing for it.
 */
import { anyUnpack } from '@bufbuild/protobuf/wkt';
import { create } from '@bufbuild/protobuf';
import { BackendSchema, WaypointSchema } from '../api/amesh/waypoint/v1/waypoint_pb.js';
import type { Logger } from '../lib/log.js';
import type { NamedSubscription } from '../ztunnel/xds/ads-client.js';
import { extAuthzProvidersFromXds, type ExtAuthzProviderConfig } from './ext-authz.js';
import { jwtPoliciesFromXds, remoteKeySets, type JwtPolicy } from './jwt-authenticator.js';
import { l7PoliciesFromXds, type L7Policy } from './l7-authorization.js';
import { backend, routeTablesFromXds, type Backend, type RouteTable } from './route-table.js';
import { DEFAULT_ENDPOINT_POLICY } from './endpoint-balancer.js';
import { NO_LIMITS } from './circuit-breakers.js';
import { gatewayListenersFromXds, type GatewayListenerConfig } from './gateway-listeners-config.js';

export const WAYPOINT_TYPE = `type.googleapis.com/${WaypointSchema.typeName}`;

export class WaypointRules {
  private tables = new Map<string, RouteTable>();
  private current: readonly L7Policy[] = [];
  private jwt: readonly JwtPolicy[] = [];
  private providers: ReadonlyMap<string, ExtAuthzProviderConfig> = new Map();
  private readonly remoteKeys = remoteKeySets();
  private undecodable: string | undefined;
  private gatewayListeners: readonly GatewayListenerConfig[] = [];
  private logRequests = false;
  /** Each Service port with a traffic policy, as the backend a request no route sends elsewhere goes to. */
  private serviceBackends = new Map<string, Backend>();
  private readonly watchers: (() => void)[] = [];

  constructor(
    /** The proxy's workload `namespace/name` (its Deployment's). */
    readonly name: string,
    private readonly log: Logger,
  ) {}

  /** The subscription the waypoint's xDS client makes for its resource. */
  subscription(): NamedSubscription {
    return {
      typeUrl: WAYPOINT_TYPE,
      names: [this.name],
      apply: (resources, removed) => {
        const rejects: string[] = [];
        for (const r of resources) if (r.name === this.name) rejects.push(...this.install(r.resource));
        if (removed.includes(this.name)) this.clear();
        return rejects;
      },
    };
  }

  /** The routes for a Service port: the port's own table, else the one for every port; undefined: none. */
  routesFor(namespace: string, hostname: string, port: number): RouteTable | undefined {
    return this.tables.get(`${namespace}/${hostname}:${port}`) ?? this.tables.get(`${namespace}/${hostname}:0`);
  }

  /** The Service port's own backend, with its DestinationRule traffic policy; undefined: it has none. */
  serviceBackend(namespace: string, hostname: string, port: number): Backend | undefined {
    return this.serviceBackends.get(`${namespace}/${hostname}:${port}`);
  }

  /** An ingress gateway's listeners. */
  get listeners(): readonly GatewayListenerConfig[] {
    return this.gatewayListeners;
  }

  /** Whether each request is logged (meshConfig.accessLogFile). */
  get accessLog(): boolean {
    return this.logRequests;
  }

  /** Calls `f` after each push is applied. */
  watch(f: () => void): void {
    this.watchers.push(f);
  }

  get policies(): readonly L7Policy[] {
    return this.current;
  }

  get jwtPolicies(): readonly JwtPolicy[] {
    return this.jwt;
  }

  /** The ext_authz provider a CUSTOM policy names; undefined when istiod sent none by that name. */
  extAuthzProvider(name: string): ExtAuthzProviderConfig | undefined {
    return this.providers.get(name);
  }

  /** Why every request is refused: the last resource istiod sent could not be decoded. */
  get broken(): string | undefined {
    return this.undecodable;
  }

  dump(): object {
    return {
      name: this.name,
      routes: [...this.tables.keys()],
      trafficPolicies: this.trafficPolicies(),
      policies: this.current.map((p) => `${p.action} ${p.name}`),
      requestAuthentications: this.jwt.map((p) => p.name),
      listeners: this.gatewayListeners.map((l) => ({
        name: l.name,
        port: l.port,
        protocol: l.protocol,
        hostname: l.hostname,
        credentials: l.credentialNames,
        virtualHosts: [...l.virtualHosts.keys()],
      })),
      ...(this.undecodable === undefined ? {} : { rejected: this.undecodable }),
    };
  }

  /**
   * The backends (Envoy's cluster names, the namespace added) whose DestinationRule traffic policy the proxy applies,
   * each with what it applies: for an operator asking whether a rule took effect.
   */
  private trafficPolicies(): Record<string, string[]> {
    const out: Record<string, string[]> = {};
    const backends = [
      ...[...this.tables.values()].flatMap((t) =>
        t.routes.flatMap((r) => (r.action.t === 'forward' ? r.action.backends : [])),
      ),
      ...this.serviceBackends.values(),
    ];
    for (const b of backends) {
      const applied = [
        ...(b.policy.hash === undefined ? [] : [`consistentHash ${b.policy.hash.t}`]),
        ...(b.policy.simple === DEFAULT_ENDPOINT_POLICY.simple ? [] : [`loadBalancer ${b.policy.simple}`]),
        ...(b.policy.outlier === undefined ? [] : ['outlierDetection']),
        ...(b.limits === NO_LIMITS ? [] : ['connectionPool']),
      ];
      if (applied.length > 0) out[b.cluster] = applied;
    }
    return out;
  }

  private install(resource: Parameters<NamedSubscription['apply']>[0][number]['resource']): string[] {
    let msg;
    try {
      msg = resource === undefined ? undefined : anyUnpack(resource, WaypointSchema);
    } catch (e) {
      msg = undefined;
      this.undecodable = `${this.name}: ${(e as Error).message}`;
    }
    if (msg === undefined) {
      this.undecodable ??= `${this.name}: not an ${WAYPOINT_TYPE}`;
      this.log.error({ waypoint: this.name, error: this.undecodable }, 'waypoint config rejected; refusing requests');
      return [this.undecodable];
    }
    this.undecodable = undefined;
    const routes = routeTablesFromXds(msg.services);
    const policies = l7PoliciesFromXds(msg.policies);
    const jwt = jwtPoliciesFromXds(msg.requestAuthentications, this.remoteKeys);
    const listeners = gatewayListenersFromXds(msg.listeners);
    this.tables = new Map(routes.tables.map((t) => [`${t.namespace}/${t.hostname}:${t.port}`, t]));
    this.current = policies.policies;
    this.jwt = jwt.policies;
    this.providers = extAuthzProvidersFromXds(msg.extAuthzProviders);
    this.gatewayListeners = listeners.listeners;
    this.logRequests = msg.accessLog;
    this.serviceBackends = new Map(
      msg.servicePolicies.map((p) => [
        `${p.namespace}/${p.hostname}:${p.port}`,
        backend(
          create(BackendSchema, {
            namespace: p.namespace,
            hostname: p.hostname,
            port: p.port,
            weight: 1,
            trafficPolicy: p.trafficPolicy,
          }),
        ),
      ]),
    );
    for (const f of this.watchers) f();
    this.log.info(
      {
        waypoint: this.name,
        routeTables: routes.tables.length,
        policies: policies.policies.length,
        requestAuthentications: jwt.policies.length,
        listeners: listeners.listeners.length,
      },
      'waypoint config applied',
    );
    return [...routes.rejected, ...policies.rejected, ...jwt.rejected, ...listeners.rejected];
  }

  private clear(): void {
    this.tables = new Map();
    this.current = [];
    this.jwt = [];
    this.providers = new Map();
    this.gatewayListeners = [];
    this.undecodable = undefined;
    for (const f of this.watchers) f();
    this.log.info({ waypoint: this.name }, 'waypoint config removed by istiod');
  }
}
