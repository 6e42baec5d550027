import type { Manifest } from '../registry/manifest-dir.js';
import { convertAuthorizationPolicy } from './authorization.js';
import { convertPortLevelMtls, effectiveMtlsMode, staticStrictPolicy, STATIC_STRICT_POLICY, workloadPeerAuthentication } from './peer-authentication.js';
import { nodeLocality } from './locality.js';
import { selectWorkloadServices } from './select-workload-services.js';
import { convertService, convertServiceEntry, serviceBackends, serviceEntryHosts } from './services.js';
import type { AuthorizationModel, LocalityModel, ServiceModel, WorkloadModel } from './types.js';
import { convertPod, convertServiceEntryEndpoints, convertWorkloadEntry } from './workloads.js';

export interface ModelConfig {
  readonly clusterId: string;
  readonly trustDomain: string;
  readonly rootNamespace: string;
  readonly domainSuffix: string;
}

/** What istiod serves, keyed by xDS resource name (istio `pilot/pkg/model/service.go`). */
export interface MeshModel {
  /** Address resources: workload uid, or `namespace/hostname` for services. */
  readonly addresses: ReadonlyMap<string, { readonly workload: WorkloadModel } | { readonly service: ServiceModel }>;
  /** Authorization resources: `namespace/name`. */
  readonly authorizations: ReadonlyMap<string, AuthorizationModel>;
  readonly warnings: readonly string[];
}

function matchLabels(m: Manifest): Record<string, string> {
  return ((m.spec['selector'] as { matchLabels?: Record<string, string> } | undefined)?.matchLabels) ?? {};
}

/** Builds the whole model from the registry's objects (istio `pilot/pkg/serviceregistry/ambient/`). Pure: same objects, same model. */
export function buildMeshModel(objects: readonly Manifest[], cfg: ModelConfig): MeshModel {
  const warnings: string[] = [];
  const byKind = (k: string): Manifest[] => objects.filter((o) => o.kind === k);
  const services = byKind('Service');
  const selection = selectWorkloadServices(objects, cfg.domainSuffix);
  for (const { owner, hostname, by } of selection.shadowed) {
    warnings.push(`${owner.source}: ServiceEntry ${owner.metadata.namespace}/${owner.metadata.name}: host ${hostname} is served by ${by.kind} ${by.metadata.namespace}/${by.metadata.name} (${by.source}); ignored for that host`);
  }
  const backends = serviceBackends(objects, cfg.domainSuffix, selection);
  const nodeLocalities = new Map<string, LocalityModel>();
  for (const node of byKind('Node')) {
    const l = nodeLocality(node);
    if (l !== undefined) nodeLocalities.set(node.metadata.name, l);
  }
  const authorizations = new Map<string, AuthorizationModel>();
  const selectorPolicies: { key: string; ap: Manifest }[] = [];
  for (const ap of byKind('AuthorizationPolicy')) {
    const { policy, warnings: w } = convertAuthorizationPolicy(ap, cfg.rootNamespace);
    warnings.push(...w);
    if (policy === undefined) continue;
    const key = `${policy.namespace}/${policy.name}`;
    authorizations.set(key, policy);
    if (Object.keys(matchLabels(ap)).length > 0) selectorPolicies.push({ key, ap });
  }
  const pas = byKind('PeerAuthentication');
  if (pas.length > 0) authorizations.set(`${cfg.rootNamespace}/${STATIC_STRICT_POLICY}`, staticStrictPolicy(cfg.rootNamespace));

  const addresses = new Map<string, { workload: WorkloadModel } | { service: ServiceModel }>();
  /** Policy keys for a workload: selector policies from its namespace or the root namespace, and STRICT mTLS. */
  const policyKeys = (namespace: string, labels: Readonly<Record<string, string>>): string[] => {
    const keys = selectorPolicies
      .filter(({ ap }) => (ap.metadata.namespace === namespace || ap.metadata.namespace === cfg.rootNamespace) && Object.entries(matchLabels(ap)).every(([k, v]) => labels[k] === v))
      .map(({ key }) => key);
    if (pas.length > 0) {
      const mode = effectiveMtlsMode(pas, cfg.rootNamespace, namespace, labels);
      // Port-level mTLS on the workload's own PeerAuthentication replaces the static policy with a converted one.
      const wpa = workloadPeerAuthentication(pas, cfg.rootNamespace, namespace, labels);
      const converted = wpa === undefined ? undefined : convertPortLevelMtls(wpa, mode);
      if (converted !== undefined) {
        const key = `${converted.namespace}/${converted.name}`;
        authorizations.set(key, converted);
        keys.push(key);
      } else if (mode === 'STRICT') keys.push(`${cfg.rootNamespace}/${STATIC_STRICT_POLICY}`);
    }
    return [...new Set(keys)].sort();
  };
  const ctx = (namespace: string, labels: Readonly<Record<string, string>>) => ({ clusterId: cfg.clusterId, trustDomain: cfg.trustDomain, backends, authorizationPolicies: policyKeys(namespace, labels), nodeLocalities });
  for (const pod of byKind('Pod')) {
    const w = convertPod(pod, ctx(pod.metadata.namespace, pod.metadata.labels));
    if (w !== undefined) addresses.set(w.uid, { workload: w });
  }
  for (const we of byKind('WorkloadEntry')) {
    const labels = { ...we.metadata.labels, ...((we.spec['labels'] as Record<string, string> | undefined) ?? {}) };
    const w = convertWorkloadEntry(we, ctx(we.metadata.namespace, labels));
    if (w !== undefined) addresses.set(w.uid, { workload: w });
  }
  for (const se of byKind('ServiceEntry')) {
    const hosts = serviceEntryHosts(se).filter((h) => selection.serves(se, h));
    for (const w of convertServiceEntryEndpoints(se, hosts, ctx(se.metadata.namespace, se.metadata.labels))) addresses.set(w.uid, { workload: w });
    for (const s of convertServiceEntry(se, selection)) addresses.set(`${s.namespace}/${s.hostname}`, { service: s });
  }
  for (const svc of services) {
    const s = convertService(svc, cfg.domainSuffix);
    if (s !== undefined) addresses.set(`${s.namespace}/${s.hostname}`, { service: s });
  }
  return { addresses, authorizations, warnings };
}
