/**
 * The status istiod writes on routes whose parentRefs name a Gateway of istiod's `istio` class (HTTPRoutes,
 * GRPCRoutes, TLSRoutes and TCPRoutes) or a Service (the Gateway API's mesh routes: HTTPRoutes and GRPCRoutes, the
 * kinds amesh's waypoints apply), as istio's gateway controller reports them
 * (`pilot/pkg/config/kube/gateway/conditions.go` and the parent checks of `conversion.go`). For each such parentRef,
 * under `controllerName: istio.io/gateway-controller`:
 * - Accepted, for a Service: the Service exists in the route's namespace (and has the parentRef's port), else
 *   `NoMatchingParent`; for a Gateway: the route attaches to one of its listeners (`gateway-listeners.ts`), else
 *   `NotAllowedByListeners`, `NoMatchingListenerHostname` or `NoMatchingParent`, with Istio's messages;
 * - ResolvedRefs: every backendRef resolves to a Service (`resolved-refs.ts`);
 * - ResolvedWaypoints (Service parents): True, with Istio's warning when neither the Service nor its namespace has
 *   `istio.io/use-waypoint` (the route is then not applied by any waypoint).
 * Parents other controllers report are kept as they are; a status that already says this is not written again.
 * TLSRoutes and TCPRoutes hold nothing back while the API does not serve them (`route-kinds.ts`).
 */
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import { isDeepStrictEqual } from 'node:util';
import type { Logger } from '../../lib/log.js';
import type { RestartingInformer } from '../../kube/informer.js';
import { kubeRequest } from '../../kube/kube-request.js';
import { ReconcileQueue } from '../../kube/reconcile-queue.js';
import type { SharedInformerFactory } from '../../kube/shared-informer-factory.js';
import { USE_WAYPOINT_LABEL } from '../model/waypoints.js';
import { attachParent, gatewayShape, refersToGateway, routeShape } from '../model/gateway-listeners.js';
import { grantShape } from '../model/reference-grants.js';
import { GATEWAY_CONTROLLER as ROUTE_CONTROLLER } from './gateway-classes.js';
import { resolvedRefs } from './resolved-refs.js';
import { ROUTE_KINDS, type RouteKind } from './route-kinds.js';
import { sameConditions, withTimes, type Condition } from './status-conditions.js';

const GATEWAY_API = '/apis/gateway.networking.k8s.io/v1';
const MAX_ATTEMPTS = 5;

interface Ref {
  readonly group?: string;
  readonly kind?: string;
  readonly name?: string;
  readonly namespace?: string;
  readonly port?: number;
  readonly sectionName?: string;
}
interface ParentStatus {
  readonly parentRef: Ref;
  readonly controllerName: string;
  readonly conditions?: Condition[];
}
interface RouteObject extends KubernetesObject {
  spec?: { parentRefs?: Ref[]; hostnames?: string[]; rules?: { backendRefs?: Ref[] }[] };
  status?: { parents?: ParentStatus[] };
}
interface ServiceObject extends KubernetesObject {
  spec?: { ports?: { port?: number }[] };
}
interface GatewayObject extends KubernetesObject {
  spec?: { gatewayClassName?: string };
}
interface ClassObject extends KubernetesObject {
  spec?: { controllerName?: string };
}

const isService = (r: Ref): boolean => (r.group ?? '') === '' && (r.kind ?? 'Service') === 'Service';

export class RouteStatusController {
  private readonly queue: ReconcileQueue;
  /** By plural. */
  private readonly routes: ReadonlyMap<string, { kind: RouteKind; inf: RestartingInformer<RouteObject> }>;
  private readonly services: RestartingInformer<ServiceObject>;
  private readonly namespaces: RestartingInformer<KubernetesObject>;
  private readonly gateways: RestartingInformer<GatewayObject>;
  private readonly classes: RestartingInformer<ClassObject>;
  private readonly grants: RestartingInformer<KubernetesObject & { spec?: unknown }>;

  constructor(
    private readonly kc: KubeConfig,
    informers: SharedInformerFactory,
    private readonly log: Logger,
  ) {
    this.queue = new ReconcileQueue((key) => this.reconcile(key), MAX_ATTEMPTS, log, 5_000);
    this.routes = new Map(
      ROUTE_KINDS.map((kind) => [
        kind.plural,
        { kind, inf: informers.informerFor<RouteObject>(`${GATEWAY_API}/${kind.plural}`) },
      ]),
    );
    this.services = informers.informerFor<ServiceObject>('/api/v1/services');
    this.namespaces = informers.informerFor<KubernetesObject>('/api/v1/namespaces');
    this.gateways = informers.informerFor<GatewayObject>(`${GATEWAY_API}/gateways`);
    this.classes = informers.informerFor<ClassObject>(`${GATEWAY_API}/gatewayclasses`);
    this.grants = informers.informerFor('/apis/gateway.networking.k8s.io/v1beta1/referencegrants');
    for (const [plural, { inf }] of this.routes) {
      const byKey = (o: KubernetesObject): void =>
        this.queue.add(`${plural}/${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`);
      inf.addEventHandler({ add: byKey, update: byKey });
    }
    // A Service or namespace label that appears or goes changes what the routes of that namespace report.
    const everyRouteIn = (namespace: string | undefined): void => {
      for (const [plural, { inf }] of this.routes)
        for (const r of inf.list(namespace))
          this.queue.add(`${plural}/${r.metadata?.namespace ?? ''}/${r.metadata?.name ?? ''}`);
    };
    const byNamespace = (o: KubernetesObject): void => everyRouteIn(o.metadata?.namespace);
    this.services.addEventHandler({ add: byNamespace, update: byNamespace, delete: byNamespace });
    const byName = (o: KubernetesObject): void => everyRouteIn(o.metadata?.name);
    this.namespaces.addEventHandler({ update: byName });
    // A Gateway's listeners decide which routes attach, in any namespace.
    const everyRoute = (): void => everyRouteIn(undefined);
    for (const inf of [this.gateways, this.classes, this.grants])
      inf.addEventHandler({ add: everyRoute, update: everyRoute, delete: everyRoute });
  }

  start(): void {
    const informers = [this.services, this.namespaces, this.gateways, this.classes, this.grants];
    const routes = [...this.routes.values()].map(({ kind, inf }) =>
      kind.optional ? inf.syncedOrUnserved : inf.synced,
    );
    void Promise.all([...informers.map((i) => i.synced), ...routes]).then(() => this.queue.run());
  }

  stop(): void {
    this.queue.stop();
  }

  /** `<plural>/<namespace>/<name>`: one route. */
  private async reconcile(key: string): Promise<void> {
    const [plural = '', namespace = '', name = ''] = key.split('/');
    const routes = this.routes.get(plural);
    const route = routes?.inf.get(name, namespace);
    if (routes === undefined || route === undefined || route.metadata?.deletionTimestamp !== undefined) return;
    const generation = route.metadata?.generation ?? 0;
    const previous = route.status?.parents ?? [];
    const { kind } = routes.kind;
    const ours = (route.spec?.parentRefs ?? []).flatMap((ref): ParentStatus[] => {
      const conditions = isService(ref)
        ? this.serviceConditions(route, kind, ref)
        : this.gatewayConditions(route, kind, ref);
      if (conditions === undefined) return [];
      const old = previous.find((p) => p.controllerName === ROUTE_CONTROLLER && isDeepStrictEqual(p.parentRef, ref));
      return [
        {
          parentRef: ref,
          controllerName: ROUTE_CONTROLLER,
          conditions: withTimes(conditions, old?.conditions, generation),
        },
      ];
    });
    if (ours.length === 0) return;
    const others = previous.filter((p) => p.controllerName !== ROUTE_CONTROLLER);
    const same =
      previous.length === others.length + ours.length &&
      ours.every((p) => {
        const old = previous.find(
          (o) => o.controllerName === ROUTE_CONTROLLER && isDeepStrictEqual(o.parentRef, p.parentRef),
        );
        return old !== undefined && sameConditions(old.conditions, p.conditions ?? []);
      });
    if (same) return;
    const path = `${GATEWAY_API}/namespaces/${namespace}/${plural}/${name}/status`;
    const res = await kubeRequest(this.kc, 'PUT', path, {
      ...route,
      status: { ...route.status, parents: [...others, ...ours] },
    });
    if (res.statusCode === 409) throw new Error(`${path}: the route changed meanwhile; trying again`);
    if (res.statusCode >= 300) throw new Error(`update ${path}: HTTP ${res.statusCode}: ${JSON.stringify(res.body)}`);
    this.log.debug({ route: `${namespace}/${name}`, kind: plural }, 'route status written');
  }

  /**
   * What istiod says of one Gateway parent of `route`: undefined for a Gateway that is missing or of another
   * controller's class (that controller reports it).
   */
  private gatewayConditions(route: RouteObject, kind: string, parent: Ref): Condition[] | undefined {
    const ns = route.metadata?.namespace ?? '';
    const name = parent.name ?? '';
    const gwNamespace = parent.namespace ?? ns;
    const gw = this.gateways.get(name, gwNamespace);
    if (gw === undefined || !refersToGateway(parent, { namespace: gwNamespace, name }, ns)) return undefined;
    if (this.classes.get(gw.spec?.gatewayClassName ?? '')?.spec?.controllerName !== ROUTE_CONTROLLER) return undefined;
    const namespaceLabels = new Map(
      this.namespaces.list().map((n) => [n.metadata?.name ?? '', n.metadata?.labels ?? {}] as const),
    );
    const { outcome } = attachParent(
      routeShape(kind, ns, route.metadata?.name ?? '', route.spec),
      parent,
      gatewayShape(gwNamespace, name, gw.spec),
      namespaceLabels,
    );
    const accepted: Condition = outcome.attached
      ? { type: 'Accepted', status: 'True', reason: 'Accepted', message: 'Route was valid' }
      : { type: 'Accepted', status: 'False', reason: outcome.reason, message: outcome.message };
    return [accepted, this.backendsResolved(route, kind)];
  }

  /**
   * What istiod says of one Service parent of `route`: undefined for a TLSRoute or TCPRoute, which amesh's waypoints
   * do not apply (an Accepted would say they are).
   */
  private serviceConditions(route: RouteObject, kind: string, parent: Ref): Condition[] | undefined {
    if (kind === 'TLSRoute' || kind === 'TCPRoute') return undefined;
    const ns = route.metadata?.namespace ?? '';
    const parentNs = parent.namespace ?? ns;
    const svc = this.services.get(parent.name ?? '', parentNs);
    let accepted: Condition = { type: 'Accepted', status: 'True', reason: 'Accepted', message: 'Route was valid' };
    const notAccepted = (message: string): Condition => ({
      type: 'Accepted',
      status: 'False',
      reason: 'NoMatchingParent',
      message,
    });
    if (svc === undefined) accepted = notAccepted(`parent service: "${parent.name ?? ''}" not found`);
    else if (parent.port !== undefined && !(svc.spec?.ports ?? []).some((p) => p.port === parent.port))
      accepted = notAccepted(`port ${parent.port} not found`);
    const nsLabels = this.namespaces.get(parentNs)?.metadata?.labels ?? {};
    const bound = svc?.metadata?.labels?.[USE_WAYPOINT_LABEL] ?? nsLabels[USE_WAYPOINT_LABEL];
    const waypoints: Condition = {
      type: 'ResolvedWaypoints',
      status: 'True',
      reason: 'ResolvedWaypoints',
      message:
        bound === undefined || bound === 'none'
          ? 'istio.io/use-waypoint label missing from parent and parent namespace; in ambient mode, route will not be respected'
          : 'All waypoints resolved',
    };
    return [accepted, this.backendsResolved(route, kind), waypoints];
  }

  /** ResolvedRefs of `route`, its backendRefs judged by the Services and ReferenceGrants the informers hold. */
  private backendsResolved(route: RouteObject, kind: string): Condition {
    return resolvedRefs(
      {
        kind,
        namespace: route.metadata?.namespace ?? '',
        backendRefs: (route.spec?.rules ?? []).flatMap((r) => r.backendRefs ?? []),
      },
      this.grants.list().map((g) => grantShape(g.metadata?.namespace ?? '', g.spec)),
      (namespace, name) => this.services.get(name, namespace) !== undefined,
    );
  }
}
