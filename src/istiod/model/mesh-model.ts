import type { Manifest } from '../registry/manifest-dir.js';
import { convertAuthorizationPolicy } from './authorization.js';
import { effectiveMtlsMode, staticStrictPolicy, STATIC_STRICT_POLICY } from './peer-authentication.js';
import { convertService } from './services.js';
import type { AuthorizationModel, ServiceModel, WorkloadModel } from './types.js';
import { convertPod } from './workloads.js';

export interface ModelConfig {
  readonly clusterId: string;
  readonly trustDomain: string;
  readonly rootNamespace: string;
  readonly domainSuffix: string;
}

/** What istiod serves, keyed by xDS resource name (spec §3.2). */
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

/** Builds the whole model from the registry's objects (spec §3.4, §9.2, §9.3). Pure: same objects, same model. */
export function buildMeshModel(objects: readonly Manifest[], cfg: ModelConfig): MeshModel {
  const warnings: string[] = [];
  const byKind = (k: string): Manifest[] => objects.filter((o) => o.kind === k);
  const services = byKind('Service');
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
  for (const pod of byKind('Pod')) {
    const labels = pod.metadata.labels;
    const keys = selectorPolicies
      .filter(({ ap }) => (ap.metadata.namespace === pod.metadata.namespace || ap.metadata.namespace === cfg.rootNamespace) && Object.entries(matchLabels(ap)).every(([k, v]) => labels[k] === v))
      .map(({ key }) => key);
    if (pas.length > 0 && effectiveMtlsMode(pas, cfg.rootNamespace, pod.metadata.namespace, labels) === 'STRICT') keys.push(`${cfg.rootNamespace}/${STATIC_STRICT_POLICY}`);
    const w = convertPod(pod, { clusterId: cfg.clusterId, trustDomain: cfg.trustDomain, domainSuffix: cfg.domainSuffix, services, authorizationPolicies: [...new Set(keys)].sort() });
    if (w !== undefined) addresses.set(w.uid, { workload: w });
  }
  for (const svc of services) {
    const s = convertService(svc, cfg.domainSuffix);
    if (s !== undefined) addresses.set(`${s.namespace}/${s.hostname}`, { service: s });
  }
  return { addresses, authorizations, warnings };
}
