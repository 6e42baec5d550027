import type { ResourceOf } from '../registry/manifest-dir.js';

type EndpointSlice = ResourceOf<'EndpointSlice'>;

/** The label that names the Service an EndpointSlice belongs to (`discovery.LabelServiceName`). */
export const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';

/** `namespace/name` of the Service a slice is for; undefined for a slice of no Service or of FQDN addresses. */
export function sliceService(es: EndpointSlice): string | undefined {
  const name = es.metadata.labels[SERVICE_NAME_LABEL];
  if (name === undefined || es.spec.addressType === 'FQDN') return undefined;
  return `${es.metadata.namespace}/${name}`;
}

/** How an endpoint's `targetRef` and a pod meet: kind Pod, namespace, name and uid, as Istio's `TargetRef` key. */
const podRef = (namespace: string, name: string, uid: string): string => `${namespace}/${name}/${uid}`;

/**
 * Which Services list a pod in their EndpointSlices by `targetRef`, as istio
 * `pilot/pkg/serviceregistry/ambient/workloads.go` `endpointSliceAddressIndex` indexes them: only slices labelled
 * with a Service name and not of FQDN addresses, only endpoints whose targetRef is a Pod. A pod is matched on its
 * namespace, name and uid, so a slice left from an earlier pod of the same name does not name the new one.
 */
export class EndpointSliceIndex {
  /** Slice object key → the Service it is for and the pod refs it lists. */
  private readonly slices = new Map<string, { readonly service: string; readonly refs: readonly string[] }>();
  /** Pod ref → slice object keys that list it. */
  private readonly byPod = new Map<string, Set<string>>();

  /**
   * Records a slice's current version (undefined: deleted). Returns the pods, as `namespace/name`, whose
   * Services may have changed: those only one version lists, or all either lists when the Service changed.
   */
  set(key: string, es: EndpointSlice | undefined): Set<string> {
    const before = this.slices.get(key);
    for (const ref of before?.refs ?? []) {
      const keys = this.byPod.get(ref);
      keys?.delete(key);
      if (keys?.size === 0) this.byPod.delete(ref);
    }
    this.slices.delete(key);
    const service = es === undefined ? undefined : sliceService(es);
    const refs =
      service === undefined
        ? []
        : (es?.spec.endpoints ?? []).flatMap((ep) => {
            const t = ep?.targetRef;
            if (t?.kind !== 'Pod' || typeof t.name !== 'string') return [];
            return [podRef(t.namespace ?? '', t.name, t.uid ?? '')];
          });
    if (service !== undefined) this.slices.set(key, { service, refs });
    for (const ref of refs) {
      let keys = this.byPod.get(ref);
      if (keys === undefined) this.byPod.set(ref, (keys = new Set()));
      keys.add(key);
    }
    const old = new Set(before?.refs);
    const now = new Set(refs);
    const sameService = before?.service === service;
    const touched = [...old, ...now].filter((r) => !sameService || old.has(r) !== now.has(r));
    return new Set(touched.map((r) => r.slice(0, r.lastIndexOf('/'))));
  }

  /** `namespace/name` of every Service whose slices list this pod, sorted. */
  servicesOf(pod: { readonly namespace: string; readonly name: string; readonly uid?: string }): string[] {
    const keys = this.byPod.get(podRef(pod.namespace, pod.name, pod.uid ?? '')) ?? [];
    return [...new Set([...keys].map((k) => this.slices.get(k)!.service))].sort();
  }
}
