/**
 * `components.<name>.k8s`: the Kubernetes settings istioctl patches into a component's rendered objects after the
 * chart (istio operator/pkg/render/postprocess.go): each field is a strategic merge patch of the component's
 * workload (Deployment istiod, DaemonSets istio-cni-node and ztunnel: its pod template or its main container), of
 * its HorizontalPodAutoscaler (`hpaSpec`), PodDisruptionBudget (`podDisruptionBudget`, where a maxUnavailable drops
 * the chart's minAvailable) or Service (`service`, `serviceAnnotations`). A gateway's objects are those named after
 * its entry, and its `service.ports` are left out of the Service patch, having become the chart's `ports` value
 * (chart-values.ts). `volumes` and `volumeMounts` are accepted and unused, as in istioctl; `overlays` (istioctl's
 * path patches) are not supported.
 */
import { kindOfObject } from '../apiserver/kinds.js';
import type { KubeObject } from '../apiserver/kube-object.js';
import { applyMergePatch } from '../apiserver/merge-patch.js';
import { applyStrategicMergePatch } from '../apiserver/strategic-merge-patch.js';
import { MeshError } from '../lib/errors.js';
import { isRecord } from '../lib/record.js';
import type { RenderedObject } from './chart-helpers.js';
import { workloadName, type ComponentSpec } from './components.js';
import { getTree, type Tree } from './value-tree.js';

type Target = 'workload' | 'HorizontalPodAutoscaler' | 'PodDisruptionBudget' | 'Service';

/** Each k8s field: the object it patches and the patch it makes of its value. */
const PATCHES: Readonly<Record<string, { target: Target; patch: (v: unknown, container: string) => Tree }>> = {
  affinity: { target: 'workload', patch: (v) => podSpec({ affinity: v }) },
  env: { target: 'workload', patch: (v, c) => podSpec({ containers: [{ name: c, env: v }] }) },
  hpaSpec: { target: 'HorizontalPodAutoscaler', patch: (v) => ({ spec: v }) },
  imagePullPolicy: { target: 'workload', patch: (v, c) => podSpec({ containers: [{ name: c, imagePullPolicy: v }] }) },
  nodeSelector: { target: 'workload', patch: (v) => podSpec({ nodeSelector: v }) },
  podDisruptionBudget: { target: 'PodDisruptionBudget', patch: (v) => ({ spec: v }) },
  podAnnotations: { target: 'workload', patch: (v) => ({ spec: { template: { metadata: { annotations: v } } } }) },
  priorityClassName: { target: 'workload', patch: (v) => podSpec({ priorityClassName: v }) },
  readinessProbe: { target: 'workload', patch: (v, c) => podSpec({ containers: [{ name: c, readinessProbe: v }] }) },
  replicaCount: { target: 'workload', patch: (v) => ({ spec: { replicas: v } }) },
  resources: { target: 'workload', patch: (v, c) => podSpec({ containers: [{ name: c, resources: v }] }) },
  strategy: { target: 'workload', patch: (v) => ({ spec: { strategy: v } }) },
  tolerations: { target: 'workload', patch: (v) => podSpec({ tolerations: v }) },
  serviceAnnotations: { target: 'Service', patch: (v) => ({ metadata: { annotations: v } }) },
  service: { target: 'Service', patch: (v) => ({ spec: v }) },
  securityContext: { target: 'workload', patch: (v) => podSpec({ securityContext: v }) },
};

function podSpec(spec: Tree): Tree {
  return { spec: { template: { spec } } };
}

function patchObject(o: RenderedObject, patch: Tree): RenderedObject {
  const kind = kindOfObject(o.apiVersion, o.kind);
  const obj = o as unknown as KubeObject;
  return (kind === undefined
    ? applyMergePatch(obj, patch)
    : applyStrategicMergePatch(obj, patch, kind)) as unknown as RenderedObject;
}

/** A PodDisruptionBudget may not have both; istioctl keeps the user's maxUnavailable (postProcessPodDisruptionBudget). */
function oneBudget(o: RenderedObject): RenderedObject {
  const spec = o['spec'];
  if (!isRecord(spec) || !('maxUnavailable' in spec) || !('minAvailable' in spec)) return o;
  const rest = { ...spec };
  delete rest['minAvailable'];
  return { ...o, spec: rest };
}

/** The component's objects with its `k8s` settings applied. */
export function applyComponentPatches(c: ComponentSpec, objects: RenderedObject[], revision: string): RenderedObject[] {
  const k8s = getTree(c.spec, ['k8s']);
  const workload = c.component.workload;
  if (k8s === undefined || workload === undefined) return objects;
  if (k8s['overlays'] !== undefined)
    throw new MeshError(
      'INSTALL_ERR_VALUES',
      `spec.components.${c.component.specName}.k8s.overlays: amesh does not apply overlays; use the other k8s settings or values`,
    );
  const name = workloadName(c, revision);
  return objects.map((o) => {
    let out = o;
    for (const [field, { target, patch }] of Object.entries(PATCHES)) {
      let v = k8s[field];
      if (field === 'service' && c.component.multi === true && isRecord(v)) {
        const rest = { ...v };
        delete rest['ports'];
        v = rest;
      }
      if (v === undefined) continue;
      const kind = target === 'workload' ? workload.kind : target;
      if (o.kind !== kind || o.metadata.name !== name) continue;
      out = patchObject(out, patch(v, workload.container));
      if (target === 'PodDisruptionBudget') out = oneBudget(out);
    }
    return out;
  });
}
