/**
 * Istio's DestinationRules, as the waypoint and gateway routes use them: a VirtualService destination naming a
 * `subset` goes to the workloads of the host whose labels match that subset's, as the endpoints istio
 * `pilot/pkg/xds/endpoints/endpoint_builder.go` gives a subset cluster (`outbound|port|subset|host`), and every
 * backend of a host gets the rule's traffic policy for its subset and port (`traffic-policies.ts`).
 * - A host's rules are those for it (a short name taken in the rule's namespace) in the Service's own namespace,
 *   else in the root namespace, as a proxy without rules of its own namespace finds them; rules with a
 *   `workloadSelector` apply to the workloads they select, not to a waypoint, and are left out.
 * - Several rules for one host merge their subsets, the oldest rule's first when two name the same subset, and the
 *   oldest rule with a `trafficPolicy` gives it (istio `pilot/pkg/model/destination_rule.go`).
 * A subset no rule defines has no endpoints: its requests are answered 503, as Envoy answers a cluster it lacks.
 */
import type { ResourceOf } from '../registry/manifest-dir.js';
import { byAge, present, type BackendModel } from './http-routes.js';
import { mergedPolicy, policyWarnings, trafficPolicyModel, type TrafficPolicyModel } from './traffic-policies.js';
import { qualifiedHost } from './virtual-services.js';

/** A subset's labels, for `namespace/hostname` of a Service and a subset name; undefined: no rule defines it. */
export type SubsetLookup = (
  namespace: string,
  hostname: string,
  subset: string,
) => Readonly<Record<string, string>> | undefined;

/** The traffic policy of `namespace/hostname` for a subset (none: the whole Service) and port; undefined: none. */
export type TrafficPolicyLookup = (
  namespace: string,
  hostname: string,
  subset: string | undefined,
  port: number,
) => TrafficPolicyModel | undefined;

/** A host's rules, merged: its subsets (labels, and their own policies) and the policy of the oldest rule with one. */
interface MergedRule {
  readonly name: string;
  policy: unknown;
  readonly subsets: Map<string, { readonly labels: Readonly<Record<string, string>>; readonly policy: unknown }>;
}

/** The subsets and traffic policies DestinationRules define, with what of them is not applied. */
export function destinationRules(
  rules: readonly ResourceOf<'DestinationRule'>[],
  domainSuffix: string,
  rootNamespace: string,
): {
  readonly subsets: SubsetLookup;
  readonly trafficPolicy: TrafficPolicyLookup;
  readonly warnings: readonly string[];
} {
  const warnings: string[] = [];
  /** By `<rule namespace>/<host>`. */
  const merged = new Map<string, MergedRule>();
  for (const dr of byAge(rules)) {
    const ns = dr.metadata.namespace;
    if (Object.keys(dr.spec.workloadSelector?.matchLabels ?? {}).length > 0) continue;
    const key = `${ns}/${qualifiedHost(dr.spec.host ?? '', ns, domainSuffix)}`;
    let m = merged.get(key);
    if (m === undefined)
      merged.set(
        key,
        (m = { name: `DestinationRule ${ns}/${dr.metadata.name}`, policy: undefined, subsets: new Map() }),
      );
    m.policy ??= dr.spec.trafficPolicy ?? undefined;
    for (const s of present(dr.spec.subsets))
      if (s.name != null && !m.subsets.has(s.name))
        m.subsets.set(s.name, { labels: { ...s.labels }, policy: (s as { trafficPolicy?: unknown }).trafficPolicy });
  }
  const ruleFor = (namespace: string, hostname: string): MergedRule | undefined =>
    merged.get(`${namespace}/${hostname}`) ?? merged.get(`${rootNamespace}/${hostname}`);
  // What each rule sets that is not applied, said once per rule and subset over its ports.
  for (const m of merged.values())
    for (const [where, policy] of [
      ['', m.policy],
      ...[...m.subsets].map(([n, s]) => [` subset ${n}`, s.policy] as const),
    ] as const)
      for (const w of policyWarnings(policy))
        warnings.push(`${m.name}${where}: trafficPolicy ${w} by amesh's waypoints and gateways`);
  const cache = new Map<string, TrafficPolicyModel | undefined>();
  return {
    subsets: (namespace, hostname, subset) => ruleFor(namespace, hostname)?.subsets.get(subset)?.labels,
    trafficPolicy: (namespace, hostname, subset, port) => {
      const key = `${namespace}/${hostname}/${subset ?? ''}/${port}`;
      if (!cache.has(key)) {
        const m = ruleFor(namespace, hostname);
        const sub = subset === undefined ? undefined : m?.subsets.get(subset)?.policy;
        cache.set(key, m === undefined ? undefined : trafficPolicyModel(mergedPolicy(m.policy, sub, port)).model);
      }
      return cache.get(key);
    },
    warnings,
  };
}

/** `backend` with the traffic policy its host, subset and port have. */
export function withTrafficPolicy(backend: BackendModel, lookup: TrafficPolicyLookup): BackendModel {
  if (backend.hostname === '') return backend;
  const trafficPolicy = lookup(backend.namespace, backend.hostname, backend.subset?.name, backend.port);
  return trafficPolicy === undefined ? backend : { ...backend, trafficPolicy };
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
