import { ipBytes } from '../../lib/ip.js';
import { DEFAULT_TRUST_DOMAIN } from '../../lib/spiffe.js';
import type { Manifest, ResourceOf } from '../registry/manifest-dir.js';
import type { WorkloadEntrySpec } from '../registry/manifest-schema.js';
import { parseLocality } from './locality.js';
import { SERVICE_NAME_LABEL } from './endpoint-slice-index.js';
import { backendsFor, portsOn, serviceEntryPorts, type ServiceBackend } from './services.js';
import {
  NetworkMode,
  TunnelProtocol,
  WorkloadStatus,
  WorkloadType,
  type LocalityModel,
  type PortModel,
  type WorkloadModel,
} from './types.js';

type Pod = ResourceOf<'Pod'>;
type WorkloadEntry = ResourceOf<'WorkloadEntry'>;
type ServiceEntry = ResourceOf<'ServiceEntry'>;
type EndpointSlice = ResourceOf<'EndpointSlice'>;

/** The annotation istio-cni sets once a pod's traffic is captured; it is what makes the workload HBONE. */
export const REDIRECTION_ANNOTATION = 'ambient.istio.io/redirection';

export interface WorkloadContext {
  readonly clusterId: string;
  readonly trustDomain: string;
  readonly backends: readonly ServiceBackend[];
  /**
   * Services whose EndpointSlices list this workload by `targetRef` (Services without a selector, whose
   * endpoints someone else keeps): it backs those it is not already selected by.
   */
  readonly endpointSliceServices: readonly ServiceBackend[];
  /** Sorted policy keys that apply to this pod (selector policies, PeerAuthentication keys). */
  readonly authorizationPolicies: readonly string[];
  /** Node name → the locality its topology labels give (nodes without any are absent). */
  readonly nodeLocalities: ReadonlyMap<string, LocalityModel>;
}

function podIps(pod: Pod): string[] {
  const list = pod.status.podIPs?.map((x) => x?.ip ?? '') ?? [];
  const one = pod.status.podIP ?? '';
  return [...new Set([...list, one])].filter((ip) => ipBytes(ip) !== undefined);
}

/** Istio's label that overrides the derived workload name (`label.ServiceWorkloadName`). */
const WORKLOAD_NAME_LABEL = 'service.istio.io/workload-name';
/** A Job created by a CronJob is named `<cronjob>-<scheduled time in minutes>` (istio `pkg/kube/util.go`). */
const CRONJOB_JOB_NAME = /^(.+)-\d{8,10}$/;

/**
 * The workload a pod belongs to, as istio `pkg/kube/util.go` `GetWorkloadMetaFromPod` derives it: for a pod whose
 * name was generated, its controller owner, with a ReplicaSet named `<deployment>-<pod-template-hash>` read as its
 * Deployment and a Job named `<cronjob>-<digits>` as its CronJob; otherwise the pod's own name. The
 * `service.istio.io/workload-name` label overrides it.
 */
export function podWorkloadName(pod: Pick<Manifest, 'metadata'>): string {
  const override = pod.metadata.labels[WORKLOAD_NAME_LABEL];
  if (override !== undefined) return override;
  const owner =
    pod.metadata.generateName === undefined || pod.metadata.generateName === ''
      ? undefined
      : pod.metadata.ownerReferences?.find((r) => r.controller === true);
  if (owner === undefined || owner.name === '') return pod.metadata.name;
  const hash = pod.metadata.labels['pod-template-hash'] ?? pod.metadata.labels['rollouts-pod-template-hash'];
  if (owner.kind === 'ReplicaSet' && hash !== undefined && hash !== '' && owner.name.endsWith(`-${hash}`))
    return owner.name.slice(0, -hash.length - 1);
  if (owner.kind === 'ReplicationController' && (pod.metadata.labels['deploymentconfig'] ?? '') !== '')
    return pod.metadata.labels['deploymentconfig']!;
  if (owner.kind === 'Job') return CRONJOB_JOB_NAME.exec(owner.name)?.[1] ?? owner.name;
  return owner.name;
}

/** istio `pkg/kube/labels` `WorkloadNameFromWorkloadEntry`: the auto-registration group, the label, else its name. */
function workloadEntryName(we: WorkloadEntry, labels: Readonly<Record<string, string>>): string {
  return we.metadata.annotations['istio.io/autoRegistrationGroup'] ?? labels[WORKLOAD_NAME_LABEL] ?? we.metadata.name;
}

/** Named container ports, for named service target ports. */
export function containerPorts(pod: Pod): Record<string, number> {
  const out: Record<string, number> = {};
  for (const c of pod.spec.containers ?? []) {
    for (const p of c?.ports ?? []) {
      if (typeof p?.name === 'string' && typeof p.containerPort === 'number') out[p.name] = p.containerPort;
    }
  }
  return out;
}

const trustDomainField = (td: string): string => (td === DEFAULT_TRUST_DOMAIN ? '' : td);

/** HBONE when istio-cni captured the workload, or (VMs) when it declares a native HBONE tunnel. */
function tunnel(
  labels: Readonly<Record<string, string>>,
  annotations: Readonly<Record<string, string>>,
): { tunnelProtocol: number; nativeTunnel: boolean } {
  if (labels['networking.istio.io/tunnel'] === 'http')
    return { tunnelProtocol: TunnelProtocol.HBONE, nativeTunnel: true };
  return {
    tunnelProtocol: annotations[REDIRECTION_ANNOTATION] === 'enabled' ? TunnelProtocol.HBONE : TunnelProtocol.NONE,
    nativeTunnel: false,
  };
}

function canonical(
  labels: Readonly<Record<string, string>>,
  fallback: string,
): { canonicalName: string; canonicalRevision: string } {
  return {
    canonicalName:
      labels['service.istio.io/canonical-name'] ?? labels['app.kubernetes.io/name'] ?? labels['app'] ?? fallback,
    canonicalRevision:
      labels['service.istio.io/canonical-revision'] ??
      labels['app.kubernetes.io/version'] ??
      labels['version'] ??
      'latest',
  };
}

/** An address that is an IP goes to `addresses`; anything else is a DNS name ztunnel resolves. */
function addressOrHostname(a: string): { addresses: Uint8Array[]; hostname: string } {
  const b = ipBytes(a);
  return b === undefined ? { addresses: [], hostname: a } : { addresses: [new Uint8Array(b)], hostname: '' };
}

/** A WorkloadEntry's labels: its object's, overridden by those of its spec. */
export function workloadEntryLabels(we: WorkloadEntry): Readonly<Record<string, string>> {
  return { ...we.metadata.labels, ...we.spec.labels };
}

/** A pod's workload UID, as istio's ambient index names it. */
export const podUid = (clusterId: string, m: { readonly namespace: string; readonly name: string }): string =>
  `${clusterId}//Pod/${m.namespace}/${m.name}`;
/** A WorkloadEntry's workload UID. */
export const workloadEntryUid = (clusterId: string, m: { readonly namespace: string; readonly name: string }): string =>
  `${clusterId}/networking.istio.io/WorkloadEntry/${m.namespace}/${m.name}`;

/** A `weight` (an integer: the schema says so) as ztunnel's capacity: unset unless positive. */
const capacity = (weight: number | null | undefined): number | undefined =>
  typeof weight === 'number' && weight > 0 ? weight : undefined;

/** A WorkloadEntry → Workload (istio `pilot/pkg/serviceregistry/ambient/workloads.go` `workloadEntryWorkloadBuilder`): address or hostname, weight as capacity, its ports for named targets. */
export function convertWorkloadEntry(we: WorkloadEntry, ctx: WorkloadContext): WorkloadModel | undefined {
  const address = we.spec.address ?? '';
  if (address === '') return undefined;
  const labels = workloadEntryLabels(we);
  return {
    uid: workloadEntryUid(ctx.clusterId, we.metadata),
    name: we.metadata.name,
    namespace: we.metadata.namespace,
    ...addressOrHostname(address),
    network: we.spec.network ?? '',
    ...tunnel(labels, we.metadata.annotations),
    trustDomain: trustDomainField(ctx.trustDomain),
    serviceAccount: we.spec.serviceAccount ?? 'default',
    node: '',
    ...canonical(labels, workloadEntryName(we, labels)),
    workloadType: WorkloadType.POD,
    workloadName: workloadEntryName(we, labels),
    services: backendsFor(ctx.backends, we.metadata.namespace, labels, we.spec.ports ?? {}),
    authorizationPolicies: ctx.authorizationPolicies,
    status: WorkloadStatus.HEALTHY,
    clusterId: ctx.clusterId,
    networkMode: NetworkMode.STANDARD,
    capacity: capacity(we.spec.weight),
    locality: parseLocality(we.spec.locality ?? ''),
  };
}

/** The resolutions whose ServiceEntry, without endpoints, is reached at its hosts' own DNS names. */
const DNS_RESOLUTIONS: ReadonlySet<unknown> = new Set(['DNS', 'DNS_ROUND_ROBIN', 'DYNAMIC_DNS']);

/**
 * A ServiceEntry's endpoints → Workloads that back each host in `hosts` (the hosts it won), as istio
 * `pilot/pkg/serviceregistry/ambient/workloads.go` `serviceEntryWorkloadBuilder` builds them. A DNS ServiceEntry
 * with no endpoints and no workloadSelector gets one implicit workload per host, addressed by that hostname and
 * backing only that host. Labels, canonical names and policies come from the ServiceEntry itself.
 */
export function convertServiceEntryEndpoints(
  se: ServiceEntry,
  hosts: readonly string[],
  ctx: WorkloadContext,
): WorkloadModel[] {
  const listed = se.spec.endpoints?.map((ep) => ep ?? {}) ?? [];
  const implicit =
    listed.length === 0 && DNS_RESOLUTIONS.has(se.spec.resolution) && se.spec.workloadSelector === undefined;
  const ports = serviceEntryPorts(se);
  const key = (h: string): string => `${se.metadata.namespace}/${h}`;
  // Istio builds each implicit endpoint as a WorkloadEntry whose address is the host.
  const endpoints: { ep: WorkloadEntrySpec; backs: readonly string[] }[] = implicit
    ? hosts.map((h) => ({ ep: { address: h }, backs: [h] }))
    : listed.map((ep) => ({ ep, backs: hosts }));
  return endpoints.flatMap(({ ep, backs }) => {
    const address = ep.address ?? '';
    if (address === '' || backs.length === 0) return [];
    const named = ep.ports ?? {};
    const svcPorts = ports.map((p) => ({
      servicePort: p.port,
      targetPort:
        (p.name !== undefined ? named[p.name] : undefined) ??
        (typeof p.targetPort === 'number' ? p.targetPort : p.port),
    }));
    return [
      {
        uid: `${ctx.clusterId}/networking.istio.io/ServiceEntry/${se.metadata.namespace}/${se.metadata.name}/${address}`,
        name: se.metadata.name,
        namespace: se.metadata.namespace,
        ...addressOrHostname(address),
        network: ep.network ?? '',
        ...tunnel(se.metadata.labels, se.metadata.annotations),
        trustDomain: trustDomainField(ctx.trustDomain),
        serviceAccount: ep.serviceAccount ?? 'default',
        node: '',
        ...canonical(se.metadata.labels, se.metadata.name),
        workloadType: WorkloadType.POD,
        workloadName: se.metadata.name,
        services: Object.fromEntries(backs.map((h) => [key(h), svcPorts])),
        authorizationPolicies: ctx.authorizationPolicies,
        status: WorkloadStatus.HEALTHY,
        clusterId: ctx.clusterId,
        networkMode: NetworkMode.STANDARD,
        capacity: capacity(ep.weight),
        locality: parseLocality(ep.locality ?? ''),
      },
    ];
  });
}

/**
 * Whether a pod's Workload is HEALTHY: Ready, and not terminating. A pod being deleted is unhealthy from the moment
 * it has a deletionTimestamp, so that ztunnels stop sending it new connections during a rollout (istio
 * `pilot/pkg/serviceregistry/ambient/workloads.go`, after Kubernetes' EndpointSlice ready condition).
 */
function isHealthy(pod: Pod): boolean {
  return isReady(pod) && pod.metadata.deletionTimestamp === undefined;
}

function isReady(pod: Pod): boolean {
  const ready = pod.status.conditions?.find((c) => c?.type === 'Ready');
  // A manifest with no conditions describes a running pod: treat it as ready (Kubernetes would report Ready).
  return ready === undefined || ready?.status === 'True';
}

/**
 * A Pod → Workload (istio `pilot/pkg/serviceregistry/ambient/workloads.go` `podWorkloadBuilder`), in its node's locality. Terminal pods and pods without an IP are skipped.
 */
export function convertPod(pod: Pod, ctx: WorkloadContext): WorkloadModel | undefined {
  const phase = pod.status.phase;
  if (phase === 'Succeeded' || phase === 'Failed') return undefined;
  const ips = podIps(pod);
  if (ips.length === 0) return undefined;
  const labels = pod.metadata.labels;
  const named = containerPorts(pod);
  const services = backendsFor(ctx.backends, pod.metadata.namespace, labels, named);
  for (const b of ctx.endpointSliceServices) services[b.key] ??= portsOn(b, named);
  const wname = podWorkloadName(pod);
  const node = pod.spec.nodeName ?? '';
  return {
    uid: podUid(ctx.clusterId, pod.metadata),
    name: pod.metadata.name,
    namespace: pod.metadata.namespace,
    addresses: ips.map((ip) => new Uint8Array(ipBytes(ip)!)),
    hostname: '',
    network: '',
    ...tunnel(labels, pod.metadata.annotations),
    trustDomain: trustDomainField(ctx.trustDomain),
    serviceAccount: pod.spec.serviceAccountName ?? 'default',
    node,
    ...canonical(labels, wname),
    workloadType: WorkloadType.POD,
    workloadName: wname,
    services,
    authorizationPolicies: ctx.authorizationPolicies,
    status: isHealthy(pod) ? WorkloadStatus.HEALTHY : WorkloadStatus.UNHEALTHY,
    clusterId: ctx.clusterId,
    networkMode: pod.spec.hostNetwork === true ? NetworkMode.HOST_NETWORK : NetworkMode.STANDARD,
    capacity: undefined,
    locality: node === '' ? undefined : ctx.nodeLocalities.get(node),
  };
}

/**
 * An EndpointSlice's ports as its Service's: each TCP slice port (the API server defaults a missing name to ""
 * and protocol to TCP) joined by name with the Service port it targets.
 */
function slicePorts(es: EndpointSlice, svc: ServiceBackend): PortModel[] {
  return (es.spec.ports ?? []).flatMap((p) => {
    if (typeof p?.port !== 'number' || (p.protocol ?? 'TCP') !== 'TCP') return [];
    const sp = svc.ports.find((s) => (s.name ?? '') === (p.name ?? ''));
    return sp === undefined ? [] : [{ servicePort: sp.port, targetPort: p.port }];
  });
}

/**
 * An EndpointSlice of a Service → a Workload per endpoint that is not a pod (istio
 * `pilot/pkg/serviceregistry/ambient/workloads.go` `endpointSlicesBuilder`): the endpoints someone keeps by hand
 * for a Service without a selector, as the API server keeps `default/kubernetes`'s. Pod endpoints are skipped, as
 * the pod's own Workload carries more. Nothing else is known of such an endpoint: no identity, no policies, and
 * its address may be shared, so it is in host network mode. An endpoint with an address that is not an IP is
 * skipped, and so is a second endpoint at the same first address.
 */
export function convertEndpointSlice(
  es: EndpointSlice,
  svc: ServiceBackend | undefined,
  ctx: Pick<WorkloadContext, 'clusterId' | 'trustDomain'>,
): WorkloadModel[] {
  const serviceName = es.metadata.labels[SERVICE_NAME_LABEL];
  if (svc === undefined || serviceName === undefined || es.spec.addressType === 'FQDN') return [];
  const services = { [svc.key]: slicePorts(es, svc) };
  const seen = new Set<string>();
  return (es.spec.endpoints ?? []).flatMap((ep) => {
    const addresses = ep?.addresses?.map((a) => (typeof a === 'string' ? ipBytes(a) : undefined)) ?? [];
    const first = ep?.addresses?.[0];
    if (ep?.targetRef?.kind === 'Pod' || typeof first !== 'string' || seen.has(first)) return [];
    seen.add(first);
    if (addresses.some((b) => b === undefined)) return [];
    const ready = ep?.conditions?.ready;
    return [
      {
        uid: `${ctx.clusterId}/discovery.k8s.io/EndpointSlice/${es.metadata.namespace}/${es.metadata.name}/${first}`,
        name: es.metadata.name,
        namespace: es.metadata.namespace,
        addresses: addresses.map((b) => new Uint8Array(b!)),
        hostname: '',
        network: '',
        tunnelProtocol: TunnelProtocol.NONE,
        nativeTunnel: false,
        trustDomain: trustDomainField(ctx.trustDomain),
        serviceAccount: '',
        node: '',
        canonicalName: '',
        canonicalRevision: '',
        workloadType: WorkloadType.DEPLOYMENT,
        workloadName: '',
        services,
        authorizationPolicies: [],
        status: ready === undefined || ready === null || ready ? WorkloadStatus.HEALTHY : WorkloadStatus.UNHEALTHY,
        clusterId: ctx.clusterId,
        networkMode: NetworkMode.HOST_NETWORK,
        capacity: undefined,
        locality: undefined,
      },
    ];
  });
}
