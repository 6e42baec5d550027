/**
 * The EndpointSlice controller (k8s.io/kubernetes `pkg/controller/endpointslice`, with the reconciler of
 * `staging/src/k8s.io/endpointslice`): for every Service with a selector, slices listing the pods it selects, one
 * set per IP family of the Service, grouped by the ports each pod resolves (a named target port is looked up
 * among the pod's container ports), at most 100 endpoints a slice. Each endpoint carries Kubernetes' conditions:
 * `serving` when the pod is Ready, `terminating` when it is being deleted, and `ready` when serving and not
 * terminating (`publishNotReadyAddresses` makes both true). A Service with no endpoints keeps one empty
 * placeholder slice per family, as Kubernetes does. Slices are named `<service>-<random>`, labelled with
 * `kubernetes.io/service-name` and `endpointslice.kubernetes.io/managed-by`, and owned by their Service, so the
 * garbage collector removes them with it. ExternalName Services and Services without a selector get none, and
 * their slices are left to whoever writes them, as upstream leaves them.
 *
 * Endpoint `zone`s and topology hints are not set (nothing here reads them).
 */
import {
  DiscoveryV1Api,
  type KubeConfig,
  type V1Endpoint,
  type DiscoveryV1EndpointPort,
  type V1EndpointSlice,
  type V1Pod,
  type V1Service,
  type V1ServicePort,
} from '@kubernetes/client-node';
import { isDeepStrictEqual } from 'node:util';
import type { RestartingInformer } from '../kube/informer.js';
import { ReconcileQueue } from '../kube/reconcile-queue.js';
import type { SharedInformerFactory } from '../kube/shared-informer-factory.js';
import { compareStrings } from '../lib/compare-strings.js';
import type { Logger } from '../lib/log.js';
import { Expectations } from './expectations.js';
import { controllerReference, isPodReady, keyOf, splitKey } from './owned-objects.js';

export const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';
export const MANAGED_BY_LABEL = 'endpointslice.kubernetes.io/managed-by';
/** The `managed-by` value of kube-controller-manager's EndpointSlice controller. */
export const CONTROLLER_NAME = 'endpointslice-controller.k8s.io';
const HEADLESS_LABEL = 'service.kubernetes.io/headless';
/** `maxEndpointsPerSlice`, kube-controller-manager's default. */
const MAX_ENDPOINTS_PER_SLICE = 100;
const MAX_ATTEMPTS = 15;

type Labels = Readonly<Record<string, string>>;

const selects = (selector: Labels, labels: Labels | undefined): boolean =>
  Object.entries(selector).every(([k, v]) => labels?.[k] === v);

/** `ShouldPodBeInEndpoints` with terminating pods included: it has an IP, and its restart policy lets it run. */
function inEndpoints(p: V1Pod): boolean {
  if ((p.status?.podIP ?? '') === '') return false;
  const phase = p.status?.phase;
  if (p.spec?.restartPolicy === 'Never') return phase !== 'Failed' && phase !== 'Succeeded';
  if (p.spec?.restartPolicy === 'OnFailure') return phase !== 'Succeeded';
  return true;
}

/** The pod's IPs of one family. */
function podAddresses(p: V1Pod, family: string): string[] {
  const ips = p.status?.podIPs?.map((x) => x.ip) ?? [p.status?.podIP ?? ''];
  return ips.filter((ip) => ip !== '' && (family === 'IPv6') === ip.includes(':'));
}

/** The port a Service port reaches on a pod (`podutil.FindPort`); undefined when a named target is not there. */
function targetPortOn(sp: V1ServicePort, p: V1Pod): number | undefined {
  const t = sp.targetPort ?? sp.port;
  if (typeof t === 'number') return t;
  if (/^\d+$/.test(t)) return Number(t);
  const protocol = sp.protocol ?? 'TCP';
  for (const c of p.spec?.containers ?? [])
    for (const cp of c.ports ?? []) if (cp.name === t && (cp.protocol ?? 'TCP') === protocol) return cp.containerPort;
  return undefined;
}

function endpointPorts(svc: V1Service, p: V1Pod): DiscoveryV1EndpointPort[] {
  return (svc.spec?.ports ?? []).flatMap((sp) => {
    const port = targetPortOn(sp, p);
    if (port === undefined) return [];
    return [
      {
        name: sp.name ?? '',
        port,
        protocol: sp.protocol ?? 'TCP',
        ...(sp.appProtocol === undefined ? {} : { appProtocol: sp.appProtocol }),
      },
    ];
  });
}

/** `podToEndpoint`: the pod's addresses of one family, its conditions and a reference to it. */
function podEndpoint(svc: V1Service, p: V1Pod, addresses: string[]): V1Endpoint {
  const publish = svc.spec?.publishNotReadyAddresses === true;
  const serving = publish || isPodReady(p);
  const terminating = p.metadata?.deletionTimestamp !== undefined;
  const hostname = p.spec?.hostname ?? '';
  return {
    addresses,
    conditions: { ready: publish || (serving && !terminating), serving, terminating },
    ...(hostname !== '' && p.spec?.subdomain === svc.metadata?.name ? { hostname } : {}),
    ...(p.spec?.nodeName === undefined ? {} : { nodeName: p.spec.nodeName }),
    targetRef: {
      kind: 'Pod',
      namespace: p.metadata?.namespace ?? '',
      name: p.metadata?.name ?? '',
      uid: p.metadata?.uid ?? '',
    },
  };
}

/** What one slice should hold. */
interface DesiredSlice {
  readonly addressType: string;
  readonly ports: DiscoveryV1EndpointPort[];
  readonly endpoints: V1Endpoint[];
}

/** Which existing slice a desired one may replace: the same address type and ports, in any field order. */
const sliceShape = (addressType: string, ports: readonly DiscoveryV1EndpointPort[] | undefined): string =>
  JSON.stringify([addressType, (ports ?? []).map((p) => [p.name ?? '', p.port, p.protocol ?? 'TCP', p.appProtocol])]);

/** The slices a Service should have, given the pods of its namespace. */
export function desiredSlices(svc: V1Service, pods: readonly V1Pod[]): DesiredSlice[] {
  const selector = svc.spec?.selector ?? {};
  const selected = pods
    .filter((p) => selects(selector, p.metadata?.labels) && inEndpoints(p))
    .sort((a, b) => compareStrings(a.metadata?.name ?? '', b.metadata?.name ?? ''));
  const out: DesiredSlice[] = [];
  for (const family of svc.spec?.ipFamilies ?? ['IPv4']) {
    const groups = new Map<string, { ports: DiscoveryV1EndpointPort[]; endpoints: V1Endpoint[] }>();
    for (const p of selected) {
      const addresses = podAddresses(p, family);
      if (addresses.length === 0) continue;
      const ports = endpointPorts(svc, p);
      const shape = sliceShape(family, ports);
      let g = groups.get(shape);
      if (g === undefined) groups.set(shape, (g = { ports, endpoints: [] }));
      g.endpoints.push(podEndpoint(svc, p, addresses));
    }
    if (groups.size === 0) out.push({ addressType: family, ports: [], endpoints: [] });
    for (const g of groups.values())
      for (let i = 0; i < g.endpoints.length; i += MAX_ENDPOINTS_PER_SLICE)
        out.push({
          addressType: family,
          ports: g.ports,
          endpoints: g.endpoints.slice(i, i + MAX_ENDPOINTS_PER_SLICE),
        });
  }
  return out;
}

/** `setEndpointSliceLabels`: the Service's own labels, then the controller's. */
function sliceLabels(svc: V1Service): Record<string, string> {
  const reserved = new Set([SERVICE_NAME_LABEL, MANAGED_BY_LABEL, HEADLESS_LABEL]);
  return {
    ...Object.fromEntries(Object.entries(svc.metadata?.labels ?? {}).filter(([k]) => !reserved.has(k))),
    ...(svc.spec?.clusterIP === 'None' ? { [HEADLESS_LABEL]: '' } : {}),
    [SERVICE_NAME_LABEL]: svc.metadata?.name ?? '',
    [MANAGED_BY_LABEL]: CONTROLLER_NAME,
  };
}

export class EndpointSliceController {
  private readonly services: RestartingInformer<V1Service>;
  private readonly pods: RestartingInformer<V1Pod>;
  private readonly slices: RestartingInformer<V1EndpointSlice>;
  private readonly queue: ReconcileQueue;
  /** Slice creates and deletes in flight per Service, so a lagging informer does not make a second set. */
  private readonly expectations = new Expectations();
  /** Each pod's labels when last seen: a label change must update the Services it left too. */
  private readonly podLabels = new Map<string, Labels>();
  private readonly discovery: DiscoveryV1Api;
  readonly synced: Promise<void>;

  constructor(
    kc: KubeConfig,
    informers: SharedInformerFactory,
    private readonly log: Logger,
  ) {
    this.discovery = kc.makeApiClient(DiscoveryV1Api);
    this.queue = new ReconcileQueue((key) => this.reconcile(key), MAX_ATTEMPTS, log);
    this.services = informers.informerFor<V1Service>('/api/v1/services');
    const enqueue = (s: V1Service): void => this.queue.add(keyOf(s.metadata));
    this.services.addEventHandler({
      add: enqueue,
      update: enqueue,
      delete: (s) => this.expectations.forget(keyOf(s.metadata)),
    });
    this.pods = informers.informerFor<V1Pod>('/api/v1/pods');
    this.pods.addEventHandler({
      add: (p) => this.podEvent(p, false),
      update: (p) => this.podEvent(p, false),
      delete: (p) => this.podEvent(p, true),
    });
    this.slices = informers.informerFor<V1EndpointSlice>('/apis/discovery.k8s.io/v1/endpointslices');
    this.slices.addEventHandler({
      add: (s) => this.sliceEvent(s, (key) => this.expectations.observedAdd(key)),
      update: (s) => this.sliceEvent(s, () => undefined),
      delete: (s) => this.sliceEvent(s, (key) => this.expectations.observedDelete(key)),
    });
    this.synced = Promise.all([this.services.synced, this.pods.synced, this.slices.synced]).then(() => undefined);
  }

  start(): void {
    void this.synced.then(() => this.queue.run());
  }

  stop(): void {
    this.queue.stop();
  }

  /** Queues the Services that select the pod now or did before this event. */
  private podEvent(p: V1Pod, deleted: boolean): void {
    const key = keyOf(p.metadata);
    const before = this.podLabels.get(key);
    const now = p.metadata?.labels ?? {};
    if (deleted) this.podLabels.delete(key);
    else this.podLabels.set(key, now);
    for (const s of this.services.list(p.metadata?.namespace ?? '')) {
      const selector = s.spec?.selector;
      if (selector === undefined) continue;
      if (selects(selector, now) || (before !== undefined && selects(selector, before)))
        this.queue.add(keyOf(s.metadata));
    }
  }

  /** A managed slice changed: its Service is reconciled, so an edit or a delete by hand is undone. */
  private sliceEvent(s: V1EndpointSlice, observe: (serviceKey: string) => void): void {
    const labels = s.metadata?.labels ?? {};
    const service = labels[SERVICE_NAME_LABEL];
    if (service === undefined || labels[MANAGED_BY_LABEL] !== CONTROLLER_NAME) return;
    const key = `${s.metadata?.namespace ?? ''}/${service}`;
    observe(key);
    this.queue.add(key);
  }

  private async reconcile(key: string): Promise<void> {
    if (!this.expectations.satisfied(key)) return;
    const { namespace, name } = splitKey(key);
    const svc = this.services.get(name, namespace);
    // A deleted Service's slices go with it: the garbage collector follows their owner reference. Slices of an
    // ExternalName Service or one without a selector are someone else's (the API server keeps default/kubernetes's).
    if (svc === undefined || svc.spec?.selector === undefined || svc.spec.type === 'ExternalName') return;
    const existing = this.slices
      .list(namespace)
      .filter(
        (s) =>
          s.metadata?.labels?.[SERVICE_NAME_LABEL] === name && s.metadata.labels[MANAGED_BY_LABEL] === CONTROLLER_NAME,
      )
      .sort((a, b) => compareStrings(a.metadata?.name ?? '', b.metadata?.name ?? ''));
    const desired = desiredSlices(svc, this.pods.list(namespace));
    const labels = sliceLabels(svc);
    const unused = new Set(existing);
    const toCreate: V1EndpointSlice[] = [];
    const toUpdate: V1EndpointSlice[] = [];
    for (const d of desired) {
      const shape = sliceShape(d.addressType, d.ports);
      const reuse = [...unused].find((s) => sliceShape(s.addressType, s.ports) === shape);
      const body: V1EndpointSlice = {
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSlice',
        metadata: {
          ...(reuse === undefined
            ? { generateName: `${name}-` }
            : { name: reuse.metadata?.name, resourceVersion: reuse.metadata?.resourceVersion }),
          namespace,
          labels,
          ownerReferences: [controllerReference('v1', 'Service', svc.metadata ?? {})],
        },
        addressType: d.addressType,
        endpoints: d.endpoints,
        ports: d.ports,
      };
      if (reuse === undefined) {
        toCreate.push(body);
        continue;
      }
      unused.delete(reuse);
      const same =
        isDeepStrictEqual(reuse.endpoints ?? [], d.endpoints) && isDeepStrictEqual(reuse.metadata?.labels, labels);
      if (!same) toUpdate.push(body);
    }
    this.expectations.expect(key, toCreate.length, unused.size);
    await Promise.all([
      ...toCreate.map((body) =>
        this.write(key, () => this.discovery.createNamespacedEndpointSlice({ namespace, body })),
      ),
      ...toUpdate.map((body) =>
        this.discovery.replaceNamespacedEndpointSlice({ name: body.metadata?.name ?? '', namespace, body }),
      ),
      ...[...unused].map((s) =>
        this.write(key, () =>
          this.discovery.deleteNamespacedEndpointSlice({ name: s.metadata?.name ?? '', namespace }),
        ),
      ),
    ]);
    if (toCreate.length + toUpdate.length + unused.size > 0)
      this.log.debug(
        { service: key, created: toCreate.length, updated: toUpdate.length, deleted: unused.size },
        'endpoint slices reconciled',
      );
  }

  /** A create or delete whose event will never come (it failed) is no longer waited for. */
  private async write(key: string, call: () => Promise<unknown>): Promise<void> {
    try {
      await call();
    } catch (e) {
      this.expectations.forget(key);
      if ((e as { code?: number }).code !== 404) throw e;
    }
  }
}
