/**
 * Istio's DestinationRule subsets, as the waypoint and gateway routes use them: a VirtualService destination naming
 * a `subset` goes to the workloads of the host whose labels match that subset's, as the endpoints istio
 * `pilot/pkg/xds/endpoints/endpoint_builder.go` gives a subset cluster (`outbound|port|subset|host`).
 * - A host's rules are those for it (a short name taken in the rule's namespace) in the Service's own namespace,
 *   else in the root namespace, as a proxy without rules of its own namespace finds them; rules with a
 *   `workloadSelector` apply to the workloads they select, not to a waypoint, and are left out.
 * - Several rules for one host merge their subsets, the oldest rule's first when two name the same subset.
 * - `trafficPolicy` (load balancing, connection pools, outlier detection, TLS) is not applied; istiod says so.
 * A subset no rule defines has no endpoints: its requests are answered 503, as Envoy answers a cluster it lacks.
 */
import type { ResourceOf } from '../registry/manifest-dir.js';
import { byAge, present, type BackendModel } from './http-routes.js';
import { qualifiedHost } from './virtual-services.js';

/** A subset's labels, for `namespace/hostname` of a Service and a subset name; undefined: no rule defines it. */
export type SubsetLookup = (
  namespace: string,
  hostname: string,
  subset: string,
) => Readonly<Record<string, string>> | undefined;

/** The subsets DestinationRules define, with what of them is not applied. */
export function destinationRuleSubsets(
  rules: readonly ResourceOf<'DestinationRule'>[],
  domainSuffix: string,
  rootNamespace: string,
): { readonly lookup: SubsetLookup; readonly warnings: readonly string[] } {
  const warnings: string[] = [];
  /** `<rule namespace>/<host>` → subset name → labels. */
  const subsets = new Map<string, Map<string, Readonly<Record<string, string>>>>();
  for (const dr of byAge(rules)) {
    const ns = dr.metadata.namespace;
    const name = `DestinationRule ${ns}/${dr.metadata.name}`;
    if (Object.keys(dr.spec.workloadSelector?.matchLabels ?? {}).length > 0) continue;
    if (dr.spec.trafficPolicy != null)
      warnings.push(`${name}: trafficPolicy is not applied by amesh's waypoints and gateways`);
    const key = `${ns}/${qualifiedHost(dr.spec.host ?? '', ns, domainSuffix)}`;
    let byName = subsets.get(key);
    if (byName === undefined) subsets.set(key, (byName = new Map<string, Readonly<Record<string, string>>>()));
    for (const s of present(dr.spec.subsets)) {
      if ((s as { trafficPolicy?: unknown }).trafficPolicy != null)
        warnings.push(
          `${name}: subset ${s.name ?? ''}: trafficPolicy is not applied by amesh's waypoints and gateways`,
        );
      if (s.name != null && !byName.has(s.name)) byName.set(s.name, { ...s.labels });
    }
  }
  return {
    lookup: (namespace, hostname, subset) =>
      (subsets.get(`${namespace}/${hostname}`) ?? subsets.get(`${rootNamespace}/${hostname}`))?.get(subset),
    warnings,
  };
}

/** A workload a subset may select: its UID (as the Services' endpoints name it), namespace and labels. */
export interface SubsetCandidate {
  readonly uid: string;
  readonly namespace: string;
  readonly labels: Readonly<Record<string, string>>;
}

const selects = (labels: Readonly<Record<string, string>>, of: Readonly<Record<string, string>>): boolean =>
  Object.entries(labels).every(([k, v]) => of[k] === v);

/** Whether a subset of `backend` selects a workload of `namespace` with `labels` (its endpoints would change with it). */
export function subsetSelects(
  backend: BackendModel,
  namespace: string,
  labels: Readonly<Record<string, string>>,
): boolean {
  const l = backend.subset?.labels;
  return l !== undefined && backend.namespace === namespace && selects(l, labels);
}

/** `backend` with its subset's endpoints: the workloads of its namespace whose labels match, sorted by UID. */
export function withSubsetEndpoints(backend: BackendModel, workloads: readonly SubsetCandidate[]): BackendModel {
  const s = backend.subset;
  if (s === undefined) return backend;
  const labels = s.labels;
  const endpoints =
    labels === undefined
      ? []
      : workloads
          .filter((w) => w.namespace === backend.namespace && selects(labels, w.labels))
          .map((w) => w.uid)
          .sort();
  return { ...backend, subset: { ...s, endpoints } };
}
