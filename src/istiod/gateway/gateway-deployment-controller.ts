/**
 * istiod's Gateway controllers for waypoints (istio `pilot/pkg/config/kube/gatewaycommon/gatewayclass.go`,
 * `deploymentcontroller.go`, and the Gateway status of `pilot/pkg/config/kube/gateway/conversion.go`):
 *
 * - the built-in GatewayClass `istio-waypoint` (controller `istio.io/mesh-controller`) is created when missing, and
 *   marked Accepted;
 * - each Gateway of a class with that controller gets the ServiceAccount, Deployment and Service of Istio's
 *   `waypoint` template (`waypoint-template.ts`), owned by the Gateway so that they go with it. They are created,
 *   or merge-patched back to what the template says when they differ (Istio applies them server-side with force);
 * - the Gateway's status: Accepted; Programmed once its Service exists and has ready endpoints (Istio's
 *   `ResolveGatewayInstances`), with the Service's cluster IPs and hostname as `status.addresses` (a waypoint reports
 *   both types), which is what makes it a waypoint to bind to: nothing is sent to a waypoint before it can take it.
 *   An address once published is kept.
 *
 * The installation's values (hub, tag, proxy image, cluster domain, `global.waypoint`) come from the
 * `istio-sidecar-injector` ConfigMap's `values`, as Istio's injection templates read them.
 */
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import { isDeepStrictEqual } from 'node:util';
import { MeshError } from '../../lib/errors.js';
import type { Logger } from '../../lib/log.js';
import type { RestartingInformer } from '../../kube/informer.js';
import { kubeRequest } from '../../kube/kube-request.js';
import { ReconcileQueue } from '../../kube/reconcile-queue.js';
import type { SharedInformerFactory } from '../../kube/shared-informer-factory.js';
import { MESH_CONTROLLER_MANAGED, WAYPOINT_CLASS } from '../model/waypoints.js';
import { sameConditions, withTimes, type Condition } from './status-conditions.js';
import {
  defaultCaAddress,
  renderWaypoint,
  waypointNames,
  type TemplateGateway,
  type TemplateValues,
} from './waypoint-template.js';

/** The waypoint class's controller (istio `pkg/config/constants`). */
export const MESH_CONTROLLER = 'istio.io/mesh-controller';
const WAYPOINT_CLASS_DESCRIPTION = 'The default Istio waypoint GatewayClass';
const GATEWAY_API = '/apis/gateway.networking.k8s.io/v1';
const MAX_ATTEMPTS = 8;

type Obj = Record<string, unknown>;
interface GatewayObject extends KubernetesObject {
  metadata?: KubernetesObject['metadata'] & { generation?: number };
  spec?: {
    gatewayClassName?: string;
    listeners?: { name?: string; port?: number; protocol?: string }[];
    infrastructure?: { labels?: Record<string, string>; annotations?: Record<string, string> };
  };
  status?: { addresses?: { type?: string; value?: string }[]; conditions?: Condition[] };
}
interface ServiceObject extends KubernetesObject {
  spec?: { clusterIP?: string; clusterIPs?: string[] };
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
  }

  start(): void {
    const informers = [this.gateways, this.classes, this.services, this.slices, ...this.owned];
    void Promise.all(informers.map((i) => i.synced)).then(() => {
      this.queue.add('/');
      this.queue.run();
    });
  }

  stop(): void {
    this.queue.stop();
  }

  /** `/`: the built-in class; `namespace/name`: one Gateway. */
  private async reconcile(key: string): Promise<void> {
    if (key === '/') return this.reconcileClass();
    const [namespace = '', name = ''] = key.split('/');
    const gw = this.gateways.get(name, namespace);
    if (gw === undefined || gw.metadata?.deletionTimestamp !== undefined) return;
    const cls = this.classes.get(gw.spec?.gatewayClassName ?? '');
    if (cls?.spec?.controllerName !== MESH_CONTROLLER) return;
    const tgw = this.templateGateway(gw);
    for (const o of renderWaypoint(tgw, await this.values(), MESH_CONTROLLER_MANAGED)) await this.apply(o);
    await this.writeStatus(gw, waypointNames(tgw).deployment);
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
    this.log.info({ object: path }, 'updated to the waypoint template');
  }

  private async writeStatus(gw: GatewayObject, serviceName: string): Promise<void> {
    const namespace = gw.metadata?.namespace ?? '';
    const generation = gw.metadata?.generation ?? 0;
    const svc = this.services.get(serviceName, namespace);
    const host = `${serviceName}.${namespace}.svc.${this.cfg.domainSuffix}`;
    const ips = (svc?.spec?.clusterIPs ?? (svc?.spec?.clusterIP === undefined ? [] : [svc.spec.clusterIP])).filter(
      (ip) => ip !== '' && ip !== 'None',
    );
    const ports = [...new Set((gw.spec?.listeners ?? []).map((l) => l.port))];
    // Istio's ResolveGatewayInstances: the Service must exist and have instances (ready endpoints).
    const instances = (this.slices.list(namespace) as EndpointSliceObject[]).some(
      (e) =>
        e.metadata?.labels?.['kubernetes.io/service-name'] === serviceName &&
        (e.endpoints ?? []).some((ep) => ep.conditions?.ready !== false),
    );
    const unassigned = (why: string): Condition => ({
      type: 'Programmed',
      status: 'False',
      reason: 'AddressNotAssigned',
      message: `Failed to assign to any requested addresses: ${why}`,
    });
    let programmed: Condition = {
      type: 'Programmed',
      status: 'True',
      reason: 'Programmed',
      message: `Resource programmed, assigned to service(s) ${ports.map((p) => `${host}:${String(p)}`).join(', ')}`,
    };
    if (svc === undefined) programmed = unassigned(`hostname "${host}" not found`);
    else if (!instances) programmed = unassigned(`no instances found for hostname "${host}"`);
    const conditions = withTimes(
      [
        { type: 'Accepted', status: 'True', reason: 'Accepted', message: 'Resource accepted' },
        programmed,
        { type: 'ResolvedRefs', status: 'True', reason: 'ResolvedRefs', message: 'All references resolved' },
      ],
      gw.status?.conditions,
      generation,
    );
    // No address until the waypoint has instances; once published, an address is kept.
    const addresses =
      svc === undefined || !instances
        ? (gw.status?.addresses ?? [])
        : [...ips.map((value) => ({ type: 'IPAddress', value })), { type: 'Hostname', value: host }];
    if (sameConditions(gw.status?.conditions, conditions) && isDeepStrictEqual(gw.status?.addresses ?? [], addresses))
      return;
    const path = `${GATEWAY_API}/namespaces/${namespace}/gateways/${gw.metadata?.name ?? ''}/status`;
    const body = { ...gw, status: { ...gw.status, ...(addresses.length > 0 ? { addresses } : {}), conditions } };
    const res = await kubeRequest(this.kc, 'PUT', path, body);
    if (res.statusCode === 409) throw new Error(`${path}: the Gateway changed meanwhile; trying again`);
    if (res.statusCode >= 300) throw new Error(`update ${path}: HTTP ${res.statusCode}: ${JSON.stringify(res.body)}`);
  }

  /** Creates `istio-waypoint` when it is missing, and marks the classes of istiod's controller Accepted. */
  private async reconcileClass(): Promise<void> {
    if (this.classes.get(WAYPOINT_CLASS) === undefined) {
      const res = await kubeRequest(this.kc, 'POST', `${GATEWAY_API}/gatewayclasses`, {
        apiVersion: 'gateway.networking.k8s.io/v1',
        kind: 'GatewayClass',
        metadata: { name: WAYPOINT_CLASS },
        spec: { controllerName: MESH_CONTROLLER, description: WAYPOINT_CLASS_DESCRIPTION },
      });
      if (res.statusCode >= 300 && res.statusCode !== 409)
        throw new Error(`create GatewayClass ${WAYPOINT_CLASS}: HTTP ${res.statusCode}: ${JSON.stringify(res.body)}`);
      return; // its informer event brings the status update
    }
    for (const cls of this.classes.list()) {
      if (cls.spec?.controllerName !== MESH_CONTROLLER) continue;
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
