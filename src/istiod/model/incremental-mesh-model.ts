import { isDeepStrictEqual } from 'node:util';
import {
  isResource,
  objectKey,
  type Manifest,
  type ObjectChanges,
  type Resource,
  type ResourceOf,
} from '../registry/manifest-dir.js';
import { convertAuthorizationPolicy, type ConvertResult } from './authorization.js';
import {
  convertPortLevelMtls,
  effectiveMtlsMode,
  staticStrictPolicy,
  STATIC_STRICT_POLICY,
  workloadPeerAuthentication,
} from './peer-authentication.js';
import { nodeLocality } from './locality.js';
import { selectWorkloadServices } from './select-workload-services.js';
import type { ServiceSelection } from './service-selection.js';
import {
  convertService,
  convertServiceEntry,
  serviceBackends,
  serviceEntryHosts,
  servicesByName,
  type ServiceBackend,
} from './services.js';
import { EndpointSliceIndex, sliceService } from './endpoint-slice-index.js';
import type { AuthorizationModel, LocalityModel, ServiceModel, WorkloadModel } from './types.js';
import { serviceWaypoint, waypointsOf, workloadWaypoint, type WaypointInputs } from './waypoints.js';
import { subsetBackends, waypointResources, withSubsets, type WaypointResourceModel } from './waypoint-resources.js';
import { subsetSelects, type SubsetCandidate } from './destination-rules.js';
import type { BackendModel } from './http-routes.js';
import { selectorMatches } from '../../apiserver/validation/label-selector.js';
import { extAuthzProviders } from './extension-providers.js';
import { accessLogOn, readMeshConfig } from './mesh-config.js';
import {
  convertEndpointSlice,
  convertPod,
  convertServiceEntryEndpoints,
  convertWorkloadEntry,
  podUid,
  workloadEntryLabels,
  workloadEntryUid,
  type WorkloadContext,
} from './workloads.js';

export interface ModelConfig {
  readonly clusterId: string;
  readonly trustDomain: string;
  readonly rootNamespace: string;
  readonly domainSuffix: string;
  /** PILOT_ENABLE_IP_AUTOALLOCATE: ServiceEntries without addresses are served with those istiod allocated them. */
  readonly ipAutoallocate: boolean;
}

export type AddressModel = { readonly workload: WorkloadModel } | { readonly service: ServiceModel };

/** Resource names whose model changed (set or removed) in one update, and what the conversions had to say. */
export interface ModelChanges {
  readonly addresses: ReadonlySet<string>;
  readonly authorizations: ReadonlySet<string>;
  /** Waypoints (`namespace/name`) whose resource changed. */
  readonly waypoints: ReadonlySet<string>;
  readonly warnings: readonly string[];
}

/**
 * Kinds the workloads' conversions read through the shared inputs (Services and ServiceEntries select backends,
 * Nodes give localities, policies give policy keys): a change to one re-derives those inputs, then the workloads
 * whose inputs changed.
 */
const SHARED_KINDS: ReadonlySet<string> = new Set([
  'Service',
  'ServiceEntry',
  'Node',
  'AuthorizationPolicy',
  'PeerAuthentication',
  'Namespace',
  'Gateway',
  'GatewayClass',
  'HTTPRoute',
  'GRPCRoute',
  'TLSRoute',
  'TCPRoute',
  'ReferenceGrant',
  'IstioGateway',
  'VirtualService',
  'DestinationRule',
  'RequestAuthentication',
  'ConfigMap',
]);
/** Kinds whose objects produce resources of their own. */
const PRODUCER_KINDS: ReadonlySet<string> = new Set([
  'Pod',
  'WorkloadEntry',
  'ServiceEntry',
  'Service',
  'EndpointSlice',
]);
/** Producers whose conversion reads only the shared inputs that match them (a Service or ServiceEntry reads the selection). */
type Workload = ResourceOf<'Pod'> | ResourceOf<'WorkloadEntry'>;
/** The producer of the resources that come from the shared kinds as a whole (policies, the static STRICT policy). */
const SHARED = '';

const kindOfKey = (key: string): string => key.slice(0, key.indexOf('/'));

interface Produced {
  readonly addresses: ReadonlyMap<string, AddressModel>;
  readonly authorizations: ReadonlyMap<string, AuthorizationModel>;
}
const NOTHING: Produced = { addresses: new Map(), authorizations: new Map() };

/** What every workload's conversion reads, derived from the objects of the shared kinds. */
interface Shared {
  readonly selection: ServiceSelection;
  readonly backends: readonly ServiceBackend[];
  /** Every Kubernetes Service by `namespace/name`, as EndpointSlices name them. */
  readonly servicesByName: ReadonlyMap<string, ServiceBackend>;
  readonly nodeLocalities: ReadonlyMap<string, LocalityModel>;
  readonly selectorPolicies: readonly {
    readonly key: string;
    readonly matchLabels: Readonly<Record<string, string>>;
    readonly namespace: string;
  }[];
  readonly peerAuthentications: readonly ResourceOf<'PeerAuthentication'>[];
  readonly authorizations: ReadonlyMap<string, AuthorizationModel>;
  readonly waypoints: WaypointInputs;
  /** Each waypoint's routes and policies, by `namespace/name`. */
  readonly waypointResources: ReadonlyMap<string, WaypointResourceModel>;
}

const selects = (selector: Readonly<Record<string, string>>, labels: Readonly<Record<string, string>>): boolean =>
  Object.entries(selector).every(([k, v]) => labels[k] === v);

/** What a workload-like object is matched on: its namespace, labels (a WorkloadEntry's own labels too) and node. */
function workloadFacts(o: Workload): {
  namespace: string;
  labels: Readonly<Record<string, string>>;
  node: string | undefined;
} {
  if (o.kind === 'WorkloadEntry')
    return { namespace: o.metadata.namespace, labels: workloadEntryLabels(o), node: undefined };
  return { namespace: o.metadata.namespace, labels: o.metadata.labels, node: o.spec.nodeName ?? undefined };
}

/** The entries of `a` and `b` (each keyed by its JSON) that only one of them holds. */
function changedEntries<T>(a: readonly T[], b: readonly T[]): T[] {
  const key = (x: T): string => JSON.stringify(x);
  const inA = new Set(a.map(key));
  const inB = new Set(b.map(key));
  return [...a.filter((x) => !inB.has(key(x))), ...b.filter((x) => !inA.has(key(x)))];
}

/**
 * Which workloads a change of the shared inputs can touch, from what changed in them: a backend (a Service or
 * ServiceEntry host, selection included) selects by namespace and labels, a Service named by EndpointSlices the
 * pods they list (`sliceServices`), a selector policy by namespace (any, from the root namespace) and labels, a
 * locality by node. A PeerAuthentication change may alter any workload's mTLS mode, and a change of the waypoints
 * or of namespace labels any workload's waypoint binding, so they touch all. Each
 * workload reads only the shared inputs that match it, so the others would come out the same.
 */
function affectedWorkloads(
  before: Shared,
  after: Shared,
  rootNamespace: string,
  sliceServices: (o: Workload) => readonly string[],
): (o: Workload) => boolean {
  const peerAuthenticationsChanged =
    before.peerAuthentications.length !== after.peerAuthentications.length ||
    before.peerAuthentications.some((pa, i) => pa !== after.peerAuthentications[i]);
  if (peerAuthenticationsChanged || !isDeepStrictEqual(before.waypoints, after.waypoints)) return () => true;
  const backends = changedEntries(before.backends, after.backends);
  const named = new Set(changedEntries([...before.servicesByName], [...after.servicesByName]).map(([name]) => name));
  const policies = changedEntries(before.selectorPolicies, after.selectorPolicies);
  const nodes = new Set(
    [...before.nodeLocalities.keys(), ...after.nodeLocalities.keys()].filter(
      (n) => !isDeepStrictEqual(before.nodeLocalities.get(n), after.nodeLocalities.get(n)),
    ),
  );
  return (o) => {
    const w = workloadFacts(o);
    return (
      (w.node !== undefined && nodes.has(w.node)) ||
      (named.size > 0 && sliceServices(o).some((n) => named.has(n))) ||
      backends.some((b) => b.namespace === w.namespace && selects(b.selector, w.labels)) ||
      policies.some(
        (p) => (p.namespace === w.namespace || p.namespace === rootNamespace) && selects(p.matchLabels, w.labels),
      )
    );
  };
}

/** A resource name's value and how many producers hold it (a converted PeerAuthentication is shared by the workloads it selects). */
interface Held<T> {
  value: T;
  holders: number;
}

/**
 * istiod's model of what it serves (istio `pilot/pkg/serviceregistry/ambient/`), kept up to date one change at a
 * time. Each object's resources are cached; a change re-derives only the objects it touches: a Pod or
 * WorkloadEntry, just itself; an EndpointSlice, itself and the pods it lists or listed; a Service, ServiceEntry, Node, AuthorizationPolicy or PeerAuthentication, the shared
 * inputs (service selection, backends, localities, policy keys), every Service and ServiceEntry, and the workloads
 * that a changed input selects (`affectedWorkloads`; all of them for a PeerAuthentication). A re-derived resource that came out the same is not reported as changed. Pure in the sense that
 * the same objects always give the same model, whatever order the changes came in.
 */
export class IncrementalMeshModel {
  private readonly byKind = new Map<string, Map<string, Resource>>();
  private readonly produced = new Map<string, Produced>();
  private readonly addressMap = new Map<string, Held<AddressModel>>();
  private readonly authorizationMap = new Map<string, Held<AuthorizationModel>>();
  private shared: Shared | undefined;
  /** AuthorizationPolicy conversions by object version: an unchanged policy is not converted (nor warned about) again. */
  private converted = new WeakMap<Resource, ConvertResult>();
  private shadowWarnings = new Set<string>();
  private waypointWarnings = new Set<string>();
  private readonly endpointSlices = new EndpointSliceIndex();
  /** The waypoints' resources, their subsets' endpoints filled in. */
  private filledWaypoints: ReadonlyMap<string, WaypointResourceModel> = new Map();
  /** The backends of those resources that name a subset. */
  private subsetBackends: readonly BackendModel[] = [];

  constructor(private readonly cfg: ModelConfig) {}

  get addresses(): ReadonlyMap<string, AddressModel> {
    return new Map([...this.addressMap].map(([k, v]) => [k, v.value]));
  }

  get authorizations(): ReadonlyMap<string, AuthorizationModel> {
    return new Map([...this.authorizationMap].map(([k, v]) => [k, v.value]));
  }

  address(name: string): AddressModel | undefined {
    return this.addressMap.get(name)?.value;
  }

  authorization(name: string): AuthorizationModel | undefined {
    return this.authorizationMap.get(name)?.value;
  }

  /** The resource of the waypoint `namespace/name`, if it is one. */
  waypoint(name: string): WaypointResourceModel | undefined {
    return this.filledWaypoints.get(name);
  }

  get waypoints(): ReadonlyMap<string, WaypointResourceModel> {
    return this.filledWaypoints;
  }

  /** Replaces the whole object set (a directory reload): every object is treated as changed. */
  replaceAll(objects: readonly Manifest[]): ModelChanges {
    const changes = new Map<string, Manifest | undefined>();
    for (const m of this.byKind.values()) for (const key of m.keys()) changes.set(key, undefined);
    for (const o of objects) changes.set(objectKey(o), o);
    return this.update(changes);
  }

  /** Applies changed objects (undefined: deleted), keyed by `objectKey`; kinds the model does not read are ignored. */
  update(changes: ObjectChanges): ModelChanges {
    const out = {
      addresses: new Set<string>(),
      authorizations: new Set<string>(),
      waypoints: new Set<string>(),
      warnings: [] as string[],
    };
    let sharedChanged = this.shared === undefined;
    /** Pods an EndpointSlice change adds to or removes from a Service. */
    const slicePods = new Set<string>();
    /** Workloads changed, as they were and are: a subset may select either. */
    const workloadsChanged: Resource[] = [];
    for (const [key, o] of changes) {
      if (o !== undefined && !isResource(o)) continue;
      const kind = kindOfKey(key);
      let m = this.byKind.get(kind);
      if (m === undefined) this.byKind.set(kind, (m = new Map<string, Resource>()));
      const was = m.get(key);
      if (o === undefined) m.delete(key);
      else m.set(key, o);
      if (SHARED_KINDS.has(kind)) sharedChanged = true;
      if (kind === 'Pod' || kind === 'WorkloadEntry')
        for (const w of [was, o])
          if (w !== undefined) workloadsChanged.push(w);
          // A pod an Istio Gateway selects is one of its proxies: its coming and going changes their listeners.
          else if (kind === 'Pod' && [was, o].some((p) => p !== undefined && this.selectedByIstioGateway(p)))
            sharedChanged = true;
      if (kind === 'EndpointSlice')
        for (const pod of this.endpointSlices.set(key, o?.kind === 'EndpointSlice' ? o : undefined))
          slicePods.add(`Pod/${pod}`);
    }
    if (sharedChanged) {
      const before = this.shared;
      this.shared = this.deriveShared(out.warnings);
      this.subsetBackends = [...this.shared.waypointResources.values()].flatMap(subsetBackends);
      this.settle(SHARED, { addresses: new Map(), authorizations: this.shared.authorizations }, out);
      const affected =
        before === undefined
          ? undefined
          : affectedWorkloads(before, this.shared, this.cfg.rootNamespace, (o) => this.sliceServices(o));
      for (const kind of PRODUCER_KINDS) {
        for (const [key, o] of this.byKind.get(kind) ?? []) {
          const workload = o.kind === 'Pod' || o.kind === 'WorkloadEntry';
          if (affected !== undefined && workload && !changes.has(key) && !slicePods.has(key) && !affected(o)) continue;
          this.settle(key, this.produce(o), out);
        }
      }
    }
    for (const [key, o] of changes) {
      if (!PRODUCER_KINDS.has(kindOfKey(key))) continue;
      if (o === undefined) this.settle(key, NOTHING, out);
      else if (!sharedChanged && isResource(o)) this.settle(key, this.produce(o), out);
    }
    if (
      sharedChanged ||
      workloadsChanged.some((w) => {
        const f = workloadFacts(w as Workload);
        return this.subsetBackends.some((b) => subsetSelects(b, f.namespace, f.labels));
      })
    )
      this.fillSubsets(out.waypoints);
    if (!sharedChanged)
      for (const key of slicePods) {
        const pod = this.byKind.get('Pod')?.get(key);
        if (pod !== undefined && !changes.has(key)) this.settle(key, this.produce(pod), out);
      }
    return out;
  }

  /**
   * The waypoints' resources with their subsets' endpoints from the workloads now known; those that changed are
   * added to `changed`.
   */
  private fillSubsets(changed: Set<string>): void {
    const { clusterId } = this.cfg;
    const workloads: SubsetCandidate[] =
      this.subsetBackends.length === 0
        ? []
        : [
            ...this.objectsOf('Pod').map((p) => ({
              uid: podUid(clusterId, p.metadata),
              namespace: p.metadata.namespace,
              labels: p.metadata.labels,
            })),
            ...this.objectsOf('WorkloadEntry').flatMap((w) =>
              w.kind === 'WorkloadEntry'
                ? [
                    {
                      uid: workloadEntryUid(clusterId, w.metadata),
                      namespace: w.metadata.namespace,
                      labels: workloadEntryLabels(w),
                    },
                  ]
                : [],
            ),
          ];
    const next = new Map<string, WaypointResourceModel>();
    for (const [name, r] of this.shared?.waypointResources ?? []) next.set(name, withSubsets(r, workloads));
    for (const name of new Set([...this.filledWaypoints.keys(), ...next.keys()]))
      if (!isDeepStrictEqual(this.filledWaypoints.get(name), next.get(name))) changed.add(name);
    this.filledWaypoints = next;
  }

  /** `namespace/name` of the Services whose EndpointSlices list a pod (none for a WorkloadEntry). */
  private sliceServices(o: Workload): string[] {
    return o.kind === 'Pod' ? this.endpointSlices.servicesOf(o.metadata) : [];
  }

  /** Whether an Istio Gateway's selector matches the pod's labels. */
  private selectedByIstioGateway(pod: Resource): boolean {
    return this.objectsOf('IstioGateway').some(
      (g) => g.kind === 'IstioGateway' && selectorMatches({ matchLabels: g.spec.selector ?? {} }, pod.metadata.labels),
    );
  }

  private objectsOf(kind: string): Resource[] {
    return [...(this.byKind.get(kind)?.values() ?? [])];
  }

  private deriveShared(warnings: string[]): Shared {
    const { domainSuffix, rootNamespace } = this.cfg;
    const shared = [...SHARED_KINDS]
      .flatMap((k) => this.objectsOf(k))
      .sort((a, b) => (objectKey(a) < objectKey(b) ? -1 : 1));
    const selection = selectWorkloadServices(shared, domainSuffix);
    const shadowWarnings = new Set<string>();
    for (const { owner, hostname, by } of selection.shadowed) {
      const w = `${owner.source}: ServiceEntry ${owner.metadata.namespace}/${owner.metadata.name}: host ${hostname} is served by ${by.kind} ${by.metadata.namespace}/${by.metadata.name} (${by.source}); ignored for that host`;
      if (!this.shadowWarnings.has(w)) warnings.push(w);
      shadowWarnings.add(w);
    }
    this.shadowWarnings = shadowWarnings;
    const nodeLocalities = new Map<string, LocalityModel>();
    for (const node of this.objectsOf('Node')) {
      const l = nodeLocality(node);
      if (l !== undefined) nodeLocalities.set(node.metadata.name, l);
    }
    const authorizations = new Map<string, AuthorizationModel>();
    const selectorPolicies: Shared['selectorPolicies'][number][] = [];
    const converted = new WeakMap<Resource, ConvertResult>();
    for (const ap of shared.filter((o) => o.kind === 'AuthorizationPolicy')) {
      let r = this.converted.get(ap);
      if (r === undefined) {
        r = convertAuthorizationPolicy(ap, rootNamespace);
        warnings.push(...r.warnings);
      }
      converted.set(ap, r);
      if (r.policy === undefined) continue;
      const key = `${r.policy.namespace}/${r.policy.name}`;
      authorizations.set(key, r.policy);
      const matchLabels = ap.spec.selector?.matchLabels ?? {};
      if (Object.keys(matchLabels).length > 0)
        selectorPolicies.push({ key, matchLabels, namespace: ap.metadata.namespace });
    }
    this.converted = converted;
    const peerAuthentications = shared.filter((o) => o.kind === 'PeerAuthentication');
    if (peerAuthentications.length > 0)
      authorizations.set(`${rootNamespace}/${STATIC_STRICT_POLICY}`, staticStrictPolicy(rootNamespace));
    const waypoints: WaypointInputs = {
      waypoints: waypointsOf(
        shared.filter((o) => o.kind === 'Gateway'),
        shared.filter((o) => o.kind === 'GatewayClass'),
      ),
      namespaceLabels: new Map(
        shared.filter((o) => o.kind === 'Namespace').map((n) => [n.metadata.name, n.metadata.labels] as const),
      ),
    };
    const meshConfig = readMeshConfig(
      shared.filter((o) => o.kind === 'ConfigMap'),
      rootNamespace,
    );
    const mesh = extAuthzProviders(meshConfig.mesh);
    const gatewayPods = this.objectsOf('Pod').filter((p) => this.selectedByIstioGateway(p));
    const computed = waypointResources([...shared, ...gatewayPods], waypoints, {
      domainSuffix,
      trustDomain: this.cfg.trustDomain,
      rootNamespace,
      providers: mesh.providers,
      accessLog: accessLogOn(meshConfig.mesh),
    });
    // Said once while it holds, as the ServiceEntry shadowing above.
    const waypointWarnings = new Set([...meshConfig.warnings, ...mesh.warnings, ...computed.warnings]);
    for (const w of waypointWarnings) if (!this.waypointWarnings.has(w)) warnings.push(w);
    this.waypointWarnings = waypointWarnings;
    return {
      waypoints,
      waypointResources: computed.resources,
      selection,
      backends: serviceBackends(shared, domainSuffix, selection),
      servicesByName: servicesByName(shared, domainSuffix),
      nodeLocalities,
      selectorPolicies,
      peerAuthentications,
      authorizations,
    };
  }

  /**
   * Policy keys for a workload: selector policies from its namespace or the root namespace, and STRICT mTLS; a
   * workload PeerAuthentication with port-level mTLS replaces the static policy with a converted one.
   */
  private policies(
    namespace: string,
    labels: Readonly<Record<string, string>>,
  ): { keys: string[]; converted: AuthorizationModel | undefined } {
    const { rootNamespace } = this.cfg;
    const s = this.shared!;
    const keys = s.selectorPolicies
      .filter(
        (p) =>
          (p.namespace === namespace || p.namespace === rootNamespace) &&
          Object.entries(p.matchLabels).every(([k, v]) => labels[k] === v),
      )
      .map((p) => p.key);
    let converted: AuthorizationModel | undefined;
    if (s.peerAuthentications.length > 0) {
      const mode = effectiveMtlsMode(s.peerAuthentications, rootNamespace, namespace, labels);
      const wpa = workloadPeerAuthentication(s.peerAuthentications, rootNamespace, namespace, labels);
      converted = wpa === undefined ? undefined : convertPortLevelMtls(wpa, mode);
      if (converted !== undefined) keys.push(`${converted.namespace}/${converted.name}`);
      else if (mode === 'STRICT') keys.push(`${rootNamespace}/${STATIC_STRICT_POLICY}`);
    }
    return { keys: [...new Set(keys)].sort(), converted };
  }

  /** The resources one object produces with the current shared inputs. */
  private produce(o: Resource): Produced {
    const s = this.shared!;
    const addresses = new Map<string, AddressModel>();
    const authorizations = new Map<string, AuthorizationModel>();
    const ctx = (
      namespace: string,
      labels: Readonly<Record<string, string>>,
      sliceServices: readonly string[] = [],
    ): WorkloadContext => {
      const p = this.policies(namespace, labels);
      if (p.converted !== undefined) authorizations.set(`${p.converted.namespace}/${p.converted.name}`, p.converted);
      return {
        clusterId: this.cfg.clusterId,
        trustDomain: this.cfg.trustDomain,
        backends: s.backends,
        endpointSliceServices: sliceServices.flatMap((n) => s.servicesByName.get(n) ?? []),
        authorizationPolicies: p.keys,
        nodeLocalities: s.nodeLocalities,
      };
    };
    /** The model with the waypoint `meta` binds it to, if any (no `waypoint` key otherwise). */
    const bound = <T extends object>(
      m: T,
      meta: { namespace: string; labels: Readonly<Record<string, string>> },
      find: typeof workloadWaypoint,
    ): T => {
      const waypoint = find(s.waypoints, meta);
      return waypoint === undefined ? m : { ...m, waypoint };
    };
    const workload = (w: WorkloadModel | undefined, labels?: Readonly<Record<string, string>>): void => {
      if (w === undefined) return;
      const m = labels === undefined ? w : bound(w, { namespace: w.namespace, labels }, workloadWaypoint);
      addresses.set(w.uid, { workload: m });
    };
    const service = (v: ServiceModel | undefined, labels: Readonly<Record<string, string>>): void => {
      if (v === undefined) return;
      addresses.set(`${v.namespace}/${v.hostname}`, {
        service: bound(v, { namespace: v.namespace, labels }, serviceWaypoint),
      });
    };
    switch (o.kind) {
      case 'Pod':
        workload(convertPod(o, ctx(o.metadata.namespace, o.metadata.labels, this.sliceServices(o))), o.metadata.labels);
        break;
      case 'WorkloadEntry':
        workload(convertWorkloadEntry(o, ctx(o.metadata.namespace, workloadEntryLabels(o))), workloadEntryLabels(o));
        break;
      case 'ServiceEntry': {
        const hosts = serviceEntryHosts(o).filter((h) => s.selection.serves(o, h));
        for (const w of convertServiceEntryEndpoints(o, hosts, ctx(o.metadata.namespace, o.metadata.labels)))
          workload(w);
        for (const v of convertServiceEntry(o, s.selection, this.cfg.ipAutoallocate)) service(v, o.metadata.labels);
        break;
      }
      case 'Service':
        service(convertService(o, this.cfg.domainSuffix), o.metadata.labels);
        break;
      case 'EndpointSlice': {
        const svc = sliceService(o);
        for (const w of convertEndpointSlice(o, svc === undefined ? undefined : s.servicesByName.get(svc), this.cfg))
          workload(w);
        break;
      }
    }
    return { addresses, authorizations };
  }

  /** Installs what `key` produces now in place of what it produced before, noting the names that changed. */
  private settle(key: string, next: Produced, out: { addresses: Set<string>; authorizations: Set<string> }): void {
    const prev = this.produced.get(key) ?? NOTHING;
    if (next === NOTHING || (next.addresses.size === 0 && next.authorizations.size === 0)) this.produced.delete(key);
    else this.produced.set(key, next);
    reconcile(this.addressMap, prev.addresses, next.addresses, out.addresses);
    reconcile(this.authorizationMap, prev.authorizations, next.authorizations, out.authorizations);
  }
}

/** Moves one producer's contribution to `held` from `prev` to `next`, adding the names whose value changed to `changed`. */
function reconcile<T>(
  held: Map<string, Held<T>>,
  prev: ReadonlyMap<string, T>,
  next: ReadonlyMap<string, T>,
  changed: Set<string>,
): void {
  for (const name of prev.keys()) {
    if (next.has(name)) continue;
    const h = held.get(name);
    if (h === undefined) continue;
    if (--h.holders > 0) continue;
    held.delete(name);
    changed.add(name);
  }
  for (const [name, value] of next) {
    const h = held.get(name);
    if (h === undefined) {
      held.set(name, { value, holders: 1 });
      changed.add(name);
      continue;
    }
    if (!prev.has(name)) h.holders++;
    if (!isDeepStrictEqual(h.value, value)) {
      h.value = value;
      changed.add(name);
    }
  }
}
