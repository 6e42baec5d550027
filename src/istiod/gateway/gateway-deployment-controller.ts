/**
 * istiod's Gateway controllers (istio `pilot/pkg/config/kube/gatewaycommon/gatewayclass.go`,
 * `deploymentcontroller.go`, and the Gateway status of `pilot/pkg/config/kube/gateway/conversion.go`):
 *
 * - the built-in GatewayClasses `istio-waypoint` (controller `istio.io/mesh-controller`) and `istio` (controller
 *   `istio.io/gateway-controller`) are created when missing, and every class of those controllers marked Accepted;
 * - each Gateway of such a class gets the ServiceAccount, Deployment and Service of its class's template
 *   (`gateway-template.ts`), owned by the Gateway so that they go with it. They are created, or merge-patched back to
 *   what the template says when they differ (Istio applies them server-side with force);
 * - the Gateway's status: Accepted; Programmed once its Service exists and has ready endpoints (Istio's
 *   `ResolveGatewayInstances`) and, for a LoadBalancer Service, an external address; `status.addresses` are the load
 *   balancer's addresses when there are any, else the Service's (a waypoint reports its cluster IPs and hostname, an
 *   ingress gateway its hostname). Nothing is published before the Gateway can take traffic; an address once
 *   published is kept. An ingress Gateway's listeners get their own status (`listener-status.ts`).
 *
 * The installation's values (hub, tag, proxy image, cluster domain, `global.waypoint`) come from the
 * `istio-sidecar-injector` ConfigMap's `values`, as Istio's injection templates read them.
 */
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import { isIP } from 'node:net';
import { isDeepStrictEqual } from 'node:util';
import { MeshError } from '../../lib/errors.js';
import type { Logger } from '../../lib/log.js';
import type { RestartingInformer } from '../../kube/informer.js';
import { kubeRequest } from '../../kube/kube-request.js';
import { ReconcileQueue } from '../../kube/reconcile-queue.js';
import type { SharedInformerFactory } from '../../kube/shared-informer-factory.js';
import { gatewayShape, routeShape } from '../model/gateway-listeners.js';
import { grantShape } from '../model/reference-grants.js';
import { CONTROLLER_CLASSES, type ControllerClass } from './gateway-classes.js';
import { listenerStatuses, type ListenerStatus } from './listener-status.js';
import { ROUTE_KINDS, type RouteKind } from './route-kinds.js';
import { sameConditions, withTimes, type Condition } from './status-conditions.js';
import {
  defaultCaAddress,
  gatewayNames,
  renderGateway,
  type TemplateGateway,
  type TemplateValues,
} from './gateway-template.js';

const GATEWAY_API = '/apis/gateway.networking.k8s.io/v1';
const MAX_ATTEMPTS = 8;

type Obj = Record<string, unknown>;
interface GatewayObject extends KubernetesObject {
  metadata?: KubernetesObject['metadata'] & { generation?: number };
  spec?: {
    gatewayClassName?: string;
    listeners?: { name?: string; port?: number; protocol?: string }[];
    infrastructure?: { labels?: Record<string, string>; annotations?: Record<string, string> };
    addresses?: { type?: string; value?: string }[];
  };
  status?: {
    addresses?: { type?: string; value?: string }[];
    conditions?: Condition[];
    listeners?: (Omit<ListenerStatus, 'conditions'> & { conditions: Condition[] })[];
  };
}
interface ServiceObject extends KubernetesObject {
  spec?: { clusterIP?: string; clusterIPs?: string[]; type?: string };
  status?: { loadBalancer?: { ingress?: { ip?: string; hostname?: string }[] } };
}
interface SpecObject extends KubernetesObject {
  spec?: unknown;
}
interface SecretObject extends KubernetesObject {
  data?: Record<string, string>;
}
interface EndpointSliceObject extends KubernetesObject {
  endpoints?: { conditions?: { ready?: boolean } }[];
}
interface ClassObject extends KubernetesObject {
  spec?: { controllerName?: string };
  status?: { conditions?: Condition[] };
}

export interface GatewayControllerConfig {
  readonly podNamespace: string;
  readonly revision: string;
  readonly trustDomain: string;
  readonly clusterId: string;
  readonly domainSuffix: string;
}

/** A path's value in a JSON tree, or undefined. */
function at(tree: unknown, path: string): unknown {
  let v = tree;
  for (const k of path.split('.')) v = typeof v === 'object' && v !== null ? (v as Obj)[k] : undefined;
  return v;
}
const text = (tree: unknown, path: string, dflt = ''): string => {
  const v = at(tree, path);
  return typeof v === 'string' && v !== '' ? v : dflt;
};

/**
 * Whether every field `want` sets has that value in `have`: lists item by item, of the same length, so that fields
 * the API server defaulted inside them (a container's `terminationMessagePath`) are no difference.
 */
function covers(want: unknown, have: unknown): boolean {
  if (Array.isArray(want))
    return Array.isArray(have) && want.length === have.length && want.every((w, i) => covers(w, have[i]));
  if (typeof want !== 'object' || want === null) return isDeepStrictEqual(want, have);
  if (typeof have !== 'object' || have === null) return false;
  return Object.entries(want).every(([k, v]) => covers(v, (have as Obj)[k]));
}

/** `path` of a namespaced object of the kinds the template renders. */
function objectPath(o: Obj): string {
  const m = o['metadata'] as { name: string; namespace: string };
  switch (o['kind']) {
    case 'ServiceAccount':
      return `/api/v1/namespaces/${m.namespace}/serviceaccounts/${m.name}`;
    case 'Service':
      return `/api/v1/namespaces/${m.namespace}/services/${m.name}`;
    case 'Deployment':
      return `/apis/apps/v1/namespaces/${m.namespace}/deployments/${m.name}`;
    default:
      throw new MeshError('AMESH_ERR_CONFIG', `the waypoint template rendered a ${String(o['kind'])}`);
  }
}

export class GatewayDeploymentController {
  private readonly queue: ReconcileQueue;
  private readonly gateways: RestartingInformer<GatewayObject>;
  private readonly classes: RestartingInformer<ClassObject>;
  private readonly services: RestartingInformer<ServiceObject>;
  private readonly slices: RestartingInformer<EndpointSliceObject>;
  private readonly owned: readonly RestartingInformer<KubernetesObject>[];
  /** What an ingress Gateway's listener status reads. */
  private readonly routes: readonly (readonly [RouteKind, RestartingInformer<SpecObject>])[];
  private readonly grants: RestartingInformer<SpecObject>;
  private readonly namespaces: RestartingInformer<KubernetesObject>;
  private readonly secrets: RestartingInformer<SecretObject>;

  constructor(
    private readonly kc: KubeConfig,
    informers: SharedInformerFactory,
    private readonly cfg: GatewayControllerConfig,
    private readonly log: Logger,
  ) {
    this.queue = new ReconcileQueue((key) => this.reconcile(key), MAX_ATTEMPTS, log, 5_000);
    this.gateways = informers.informerFor<GatewayObject>(`${GATEWAY_API}/gateways`);
    this.classes = informers.informerFor<ClassObject>(`${GATEWAY_API}/gatewayclasses`);
    this.services = informers.informerFor<ServiceObject>('/api/v1/services');
    const byKey = (o: KubernetesObject): void =>
      this.queue.add(`${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`);
    this.gateways.addEventHandler({ add: byKey, update: byKey });
    const everyGateway = (): void => {
      for (const g of this.gateways.list()) byKey(g);
      this.queue.add('/');
    };
    this.classes.addEventHandler({ add: everyGateway, update: everyGateway, delete: everyGateway });
    // What a Gateway owns brings it back: an edited or deleted object is put back; its Service settles its status.
    const byOwner = (o: KubernetesObject): void => {
      const owner = o.metadata?.ownerReferences?.find((r) => r.kind === 'Gateway');
      if (owner !== undefined) this.queue.add(`${o.metadata?.namespace ?? ''}/${owner.name}`);
    };
    this.services.addEventHandler({ add: byOwner, update: byOwner, delete: byOwner });
    this.owned = [
      informers.informerFor<KubernetesObject>('/apis/apps/v1/deployments'),
      informers.informerFor<KubernetesObject>('/api/v1/serviceaccounts'),
    ];
    for (const inf of this.owned) inf.addEventHandler({ update: byOwner, delete: byOwner });
    // Its Service's endpoints say whether it has instances, which Programmed and the addresses wait for.
    this.slices = informers.informerFor<EndpointSliceObject>('/apis/discovery.k8s.io/v1/endpointslices');
    const bySliceService = (e: EndpointSliceObject): void => {
      const svc = e.metadata?.labels?.['kubernetes.io/service-name'];
      const s = svc === undefined ? undefined : this.services.get(svc, e.metadata?.namespace);
      if (s !== undefined) byOwner(s);
    };
    this.slices.addEventHandler({ add: bySliceService, update: bySliceService, delete: bySliceService });
    // Routes, grants, namespaces and Secrets change what an ingress Gateway's listeners report.
    const everyIngress = (): void => {
      for (const g of this.gateways.list()) if (this.controllerOf(g)?.template.template === 'kube-gateway') byKey(g);
    };
    this.routes = ROUTE_KINDS.map((k) => [k, informers.informerFor<SpecObject>(`${GATEWAY_API}/${k.plural}`)] as const);
    this.grants = informers.informerFor<SpecObject>('/apis/gateway.networking.k8s.io/v1beta1/referencegrants');
    this.namespaces = informers.informerFor<KubernetesObject>('/api/v1/namespaces');
    this.secrets = informers.informerFor<SecretObject>('/api/v1/secrets');
    for (const inf of [...this.routes.map(([, i]) => i), this.grants, this.namespaces, this.secrets])
      inf.addEventHandler({ add: everyIngress, update: everyIngress, delete: everyIngress });
  }

  private controllerOf(gw: GatewayObject): ControllerClass | undefined {
    const cls = this.classes.get(gw.spec?.gatewayClassName ?? '');
    return CONTROLLER_CLASSES.get(cls?.spec?.controllerName ?? '');
  }

  start(): void {
    const informers = [
      this.gateways,
      this.classes,
      this.services,
      this.slices,
      ...this.owned,
      this.grants,
      this.namespaces,
      this.secrets,
    ];
    // A route kind the API may not serve (route-kinds.ts) holds nothing back while it is not served.
    const routes = this.routes.map(([k, i]) => (k.optional ? i.syncedOrUnserved : i.synced));
    void Promise.all([...informers.map((i) => i.synced), ...routes]).then(() => {
      this.queue.add('/');
      this.queue.run();
    });
  }

  stop(): void {
    this.queue.stop();
  }

  /** `/`: the built-in classes; `namespace/name`: one Gateway. */
  private async reconcile(key: string): Promise<void> {
    if (key === '/') return this.reconcileClass();
    const [namespace = '', name = ''] = key.split('/');
    const gw = this.gateways.get(name, namespace);
    if (gw === undefined || gw.metadata?.deletionTimestamp !== undefined) return;
    const cc = this.controllerOf(gw);
    if (cc === undefined) return;
    const tgw = this.templateGateway(gw);
    for (const o of renderGateway(tgw, await this.values(), cc.template)) await this.apply(o);
    await this.writeStatus(gw, gatewayNames(tgw, cc.template).deployment, cc);
  }

  private templateGateway(gw: GatewayObject): TemplateGateway {
    const m = gw.metadata ?? {};
    return {
      metadata: {
        name: m.name ?? '',
        namespace: m.namespace ?? '',
        uid: m.uid ?? '',
        labels: m.labels ?? {},
        annotations: m.annotations ?? {},
      },
      spec: {
        gatewayClassName: gw.spec?.gatewayClassName ?? '',
        listeners: (gw.spec?.listeners ?? []).map((l) => ({
          name: l.name ?? '',
          port: l.port ?? 0,
          protocol: l.protocol ?? '',
        })),
        ...(gw.spec?.infrastructure === undefined ? {} : { infrastructure: gw.spec.infrastructure }),
        ...(gw.spec?.addresses === undefined ? {} : { addresses: gw.spec.addresses }),
      },
    };
  }

  /** The installation's values, from the injector ConfigMap of istiod's revision (defaults when it is missing). */
  private async values(): Promise<TemplateValues> {
    const suffix = this.cfg.revision === 'default' ? '' : `-${this.cfg.revision}`;
    const res = await kubeRequest(
      this.kc,
      'GET',
      `/api/v1/namespaces/${this.cfg.podNamespace}/configmaps/istio-sidecar-injector${suffix}`,
    );
    let values: unknown = {};
    if (res.statusCode === 200) {
      const raw = at(res.body, 'data.values');
      try {
        values = typeof raw === 'string' ? (JSON.parse(raw) as unknown) : {};
      } catch {
        this.log.warn('the injector ConfigMap\'s "values" is not JSON; using defaults');
      }
    }
    const hub = text(values, 'global.hub');
    const tag = text(values, 'global.tag');
    const image = text(values, 'global.proxy.image', 'amesh');
    const pullSecrets = at(values, 'global.imagePullSecrets');
    const waypoint = at(values, 'global.waypoint');
    return {
      image: image.includes('/') || hub === '' ? image : `${hub}/${image}:${tag}`,
      imagePullPolicy: text(values, 'global.imagePullPolicy') || undefined,
      imagePullSecrets: Array.isArray(pullSecrets) ? pullSecrets.map(String) : [],
      clusterDomain: text(values, 'global.proxy.clusterDomain', this.cfg.domainSuffix),
      trustDomain: text(values, 'global.trustDomain', this.cfg.trustDomain),
      clusterId: text(values, 'global.multiCluster.clusterName', this.cfg.clusterId),
      network: text(values, 'global.network'),
      meshId: text(values, 'global.meshID'),
      revision: text(values, 'revision', this.cfg.revision),
      caAddress: text(values, 'global.caAddress', defaultCaAddress(this.cfg.revision, this.cfg.podNamespace)),
      pilotCertProvider: text(values, 'global.pilotCertProvider', 'istiod'),
      logLevel: text(values, 'global.logging.level', 'default:info'),
      logAsJson: at(values, 'global.logAsJson') === true,
      proxyLogLevel: text(values, 'global.proxy.logLevel', 'warning'),
      proxyComponentLogLevel: text(values, 'global.proxy.componentLogLevel', 'misc:error'),
      waypoint: typeof waypoint === 'object' && waypoint !== null ? (waypoint as Obj) : {},
    };
  }

  /** Creates `o`, or merge-patches it back to what the template says when it differs. */
  private async apply(o: Obj): Promise<void> {
    const path = objectPath(o);
    const got = await kubeRequest(this.kc, 'GET', path);
    if (got.statusCode === 404) {
      const res = await kubeRequest(this.kc, 'POST', path.slice(0, path.lastIndexOf('/')), o);
      if (res.statusCode === 409) throw new Error(`${path}: created meanwhile; trying again`);
      if (res.statusCode >= 300) throw new Error(`create ${path}: HTTP ${res.statusCode}: ${JSON.stringify(res.body)}`);
      this.log.info({ object: path }, 'created');
      return;
    }
    if (got.statusCode !== 200) throw new Error(`get ${path}: HTTP ${got.statusCode}`);
    if (covers(o, got.body)) return;
    const res = await kubeRequest(this.kc, 'PATCH', path, o, 'application/merge-patch+json');
    if (res.statusCode >= 300) throw new Error(`patch ${path}: HTTP ${res.statusCode}: ${JSON.stringify(res.body)}`);
    this.log.info({ object: path }, 'updated to the gateway template');
  }

  private async writeStatus(gw: GatewayObject, serviceName: string, cc: ControllerClass): Promise<void> {
    const namespace = gw.metadata?.namespace ?? '';
    const generation = gw.metadata?.generation ?? 0;
    const svc = this.services.get(serviceName, namespace);
    const host = `${serviceName}.${namespace}.svc.${this.cfg.domainSuffix}`;
    const ips = (svc?.spec?.clusterIPs ?? (svc?.spec?.clusterIP === undefined ? [] : [svc.spec.clusterIP])).filter(
      (ip) => ip !== '' && ip !== 'None',
    );
    const ports = [...new Set((gw.spec?.listeners ?? []).map((l) => l.port))];
    // Istio's ResolveGatewayInstances: the Service must exist and have instances (ready endpoints); a LoadBalancer
    // Service must also have been given an external address.
    const instances = (this.slices.list(namespace) as EndpointSliceObject[]).some(
      (e) =>
        e.metadata?.labels?.['kubernetes.io/service-name'] === serviceName &&
        (e.endpoints ?? []).some((ep) => ep.conditions?.ready !== false),
    );
    const external = (svc?.status?.loadBalancer?.ingress ?? []).flatMap((i) => i.ip ?? i.hostname ?? []);
    const pending = svc?.spec?.type === 'LoadBalancer' && external.length === 0;
    const internal = svc !== undefined && instances ? ports.map((p) => `${host}:${String(p)}`) : [];
    const warnings: string[] = [];
    if (svc === undefined) warnings.push(`hostname "${host}" not found`);
    else if (!instances) warnings.push(`no instances found for hostname "${host}"`);
    else if (pending) warnings.push(`address pending for hostname "${host}"`);
    let programmed: Condition = {
      type: 'Programmed',
      status: 'True',
      reason: 'Programmed',
      message: `Resource programmed, assigned to service(s) ${internal.join(', ')}`,
    };
    if (warnings.length > 0)
      programmed = {
        type: 'Programmed',
        status: 'False',
        reason: 'AddressNotAssigned',
        message:
          internal.length > 0
            ? `Assigned to service(s) ${internal.join(', ')}, but failed to assign to all requested addresses: ${warnings.join('; ')}`
            : `Failed to assign to any requested addresses: ${warnings.join('; ')}`,
      };
    const listeners = cc.template.template === 'kube-gateway' ? this.listenerStatus(gw) : undefined;
    const invalid = listeners?.filter((l) => l.conditions[0]?.status === 'False').length ?? 0;
    let accepted: Condition = { type: 'Accepted', status: 'True', reason: 'Accepted', message: 'Resource accepted' };
    if (listeners !== undefined && invalid > 0)
      accepted =
        invalid === listeners.length
          ? {
              type: 'Accepted',
              status: 'False',
              reason: 'ListenersNotValid',
              message: "None of the Gateway's listeners are valid",
            }
          : {
              type: 'Accepted',
              status: 'True',
              reason: 'ListenersNotValid',
              message: "One or more of the Gateway's listeners are invalid",
            };
    const conditions = withTimes(
      [
        accepted,
        programmed,
        { type: 'ResolvedRefs', status: 'True', reason: 'ResolvedRefs', message: 'All references resolved' },
      ],
      gw.status?.conditions,
      generation,
    );
    // Nothing until the Gateway can take traffic; once published, an address is kept.
    let addresses = gw.status?.addresses ?? [];
    if (external.length > 0) addresses = external.map((value) => ({ type: addressType(value), value }));
    else if (internal.length > 0 && !pending)
      addresses = [
        ...(cc.addressTypes === 'both' ? ips.map((value) => ({ type: 'IPAddress', value })) : []),
        { type: 'Hostname', value: host },
      ];
    const listenerStatus = listeners?.map((l) => ({
      ...l,
      supportedKinds: [...l.supportedKinds],
      conditions: withTimes(
        [...l.conditions],
        gw.status?.listeners?.find((o) => o.name === l.name)?.conditions,
        generation,
      ),
    }));
    if (
      sameConditions(gw.status?.conditions, conditions) &&
      isDeepStrictEqual(gw.status?.addresses ?? [], addresses) &&
      (listenerStatus === undefined || sameListeners(gw.status?.listeners, listenerStatus))
    )
      return;
    const path = `${GATEWAY_API}/namespaces/${namespace}/gateways/${gw.metadata?.name ?? ''}/status`;
    const body = {
      ...gw,
      status: {
        ...gw.status,
        ...(addresses.length > 0 ? { addresses } : {}),
        conditions,
        ...(listenerStatus === undefined ? {} : { listeners: listenerStatus }),
      },
    };
    const res = await kubeRequest(this.kc, 'PUT', path, body);
    if (res.statusCode === 409) throw new Error(`${path}: the Gateway changed meanwhile; trying again`);
    if (res.statusCode >= 300) throw new Error(`update ${path}: HTTP ${res.statusCode}: ${JSON.stringify(res.body)}`);
  }

  /** An ingress Gateway's listeners as the routes, grants and Secrets of the cluster make them. */
  private listenerStatus(gw: GatewayObject): ListenerStatus[] {
    const shape = gatewayShape(gw.metadata?.namespace ?? '', gw.metadata?.name ?? '', gw.spec);
    const routes = this.routes.flatMap(([{ kind }, inf]) =>
      inf.list().map((r) => routeShape(kind, r.metadata?.namespace ?? '', r.metadata?.name ?? '', r.spec)),
    );
    const grants = this.grants.list().map((g) => grantShape(g.metadata?.namespace ?? '', g.spec));
    const namespaceLabels = new Map(
      this.namespaces.list().map((n) => [n.metadata?.name ?? '', n.metadata?.labels ?? {}] as const),
    );
    return listenerStatuses(shape, routes, grants, namespaceLabels, (ns, name) => this.secrets.get(name, ns)?.data);
  }

  /** Creates the built-in classes that are missing, and marks the classes of istiod's controllers Accepted. */
  private async reconcileClass(): Promise<void> {
    let created = false;
    for (const [controllerName, cc] of CONTROLLER_CLASSES) {
      if (this.classes.get(cc.builtinClass) !== undefined) continue;
      const res = await kubeRequest(this.kc, 'POST', `${GATEWAY_API}/gatewayclasses`, {
        apiVersion: 'gateway.networking.k8s.io/v1',
        kind: 'GatewayClass',
        metadata: { name: cc.builtinClass },
        spec: { controllerName, description: cc.description },
      });
      if (res.statusCode >= 300 && res.statusCode !== 409)
        throw new Error(`create GatewayClass ${cc.builtinClass}: HTTP ${res.statusCode}: ${JSON.stringify(res.body)}`);
      created = true;
    }
    if (created) return; // their informer events bring the status update
    for (const cls of this.classes.list()) {
      if (!CONTROLLER_CLASSES.has(cls.spec?.controllerName ?? '')) continue;
      const generation = cls.metadata?.generation ?? 0;
      const conditions = withTimes(
        [{ type: 'Accepted', status: 'True', reason: 'Accepted', message: 'Handled by Istio controller' }],
        cls.status?.conditions,
        generation,
      );
      if (sameConditions(cls.status?.conditions, conditions)) continue;
      const res = await kubeRequest(
        this.kc,
        'PUT',
        `${GATEWAY_API}/gatewayclasses/${cls.metadata?.name ?? ''}/status`,
        { ...cls, status: { ...cls.status, conditions } },
      );
      if (res.statusCode >= 300) throw new Error(`update GatewayClass status: HTTP ${res.statusCode}`);
    }
  }
}

const addressType = (v: string): string => (isIP(v) === 0 ? 'Hostname' : 'IPAddress');

/** Whether the listeners' statuses say the same, whatever their conditions' times. */
function sameListeners(
  have:
    | readonly { name: string; attachedRoutes: number; supportedKinds: readonly object[]; conditions: Condition[] }[]
    | undefined,
  want: readonly { name: string; attachedRoutes: number; supportedKinds: readonly object[]; conditions: Condition[] }[],
): boolean {
  return (
    have !== undefined &&
    have.length === want.length &&
    have.every(
      (h, i) =>
        h.name === want[i]!.name &&
        h.attachedRoutes === want[i]!.attachedRoutes &&
        isDeepStrictEqual(h.supportedKinds, want[i]!.supportedKinds) &&
        sameConditions(h.conditions, want[i]!.conditions),
    )
  );
}
