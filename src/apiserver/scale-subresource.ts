/**
 * The `scale` subresource of Deployments, ReplicaSets and StatefulSets, as kubernetes pkg/registry/apps/*\/storage
 * `ScaleREST` serves it: an autoscaling/v1 Scale made from the object (its name, namespace, uid, resourceVersion
 * and creation time; `spec.replicas`; `status.replicas` and the selector as a string), and an update of the Scale
 * written back as the object's `spec.replicas` (a resourceVersion in the Scale must be the object's, a uid its
 * uid). This is what `kubectl scale` and a HorizontalPodAutoscaler controller use.
 */
import { ApiError, invalid } from './api-error.js';
import type { KindInfo } from './kind-info.js';
import type { KubeObject } from './kube-object.js';
import { invalid as invalidField } from './validation/field-errors.js';
import { asArray, asNumber, asObject, asString } from './validation/json-fields.js';

export const SCALE_API_VERSION = 'autoscaling/v1';

/** A Scale as strategic merge patch and the decode check see it: a built-in kind of autoscaling/v1. */
export const SCALE_KIND: KindInfo = Object.freeze({
  group: 'autoscaling',
  version: 'v1',
  kind: 'Scale',
  plural: 'scales',
  singular: 'scale',
  namespaced: true,
  shortNames: [],
  categories: [],
  subresources: [],
  review: false,
  strategy: undefined,
});

const OPERATORS: Readonly<Record<string, (key: string, values: string[]) => string>> = {
  In: (k, v) => `${k} in (${v.join(',')})`,
  NotIn: (k, v) => `${k} notin (${v.join(',')})`,
  Exists: (k) => k,
  DoesNotExist: (k) => `!${k}`,
};

/**
 * A `metav1.LabelSelector` as `LabelSelectorAsSelector(...).String()` writes it: requirements sorted by key,
 * values sorted, `a=b,c in (d,e),!f`; '' for none.
 */
export function selectorString(selector: unknown): string {
  const s = asObject(selector);
  if (s === undefined) return '';
  const requirements: [string, string][] = Object.entries(asObject(s.matchLabels) ?? {}).map(([k, v]) => [
    k,
    `${k}=${String(v)}`,
  ]);
  for (const e of asArray(s.matchExpressions) ?? []) {
    const expr = asObject(e) ?? {};
    const key = asString(expr.key) ?? '';
    const format = OPERATORS[asString(expr.operator) ?? ''];
    const values = (asArray(expr.values) ?? []).map(String).sort();
    if (format !== undefined) requirements.push([key, format(key, values)]);
  }
  return requirements
    .sort(([a], [b]) => Number(a > b) - Number(a < b))
    .map(([, text]) => text)
    .join(',');
}

/** The Scale of a Deployment, ReplicaSet or StatefulSet. */
export function scaleOf(obj: KubeObject): KubeObject {
  const spec = asObject(obj.spec) ?? {};
  const replicas = asNumber(spec.replicas) ?? 0;
  const selector = selectorString(spec.selector);
  const m = obj.metadata;
  return {
    apiVersion: SCALE_API_VERSION,
    kind: 'Scale',
    metadata: {
      name: m.name,
      namespace: m.namespace,
      uid: m.uid,
      resourceVersion: m.resourceVersion,
      creationTimestamp: m.creationTimestamp,
    },
    // autoscaling/v1 omits zero replicas from the spec (`omitempty`), never from the status.
    spec: replicas === 0 ? {} : { replicas },
    status: { replicas: asNumber(asObject(obj.status)?.replicas) ?? 0, ...(selector !== '' ? { selector } : {}) },
  };
}

/**
 * `obj` with the replicas `scale` asks for, after autoscaling's `ValidateScale` and the ScaleREST preconditions;
 * `conflict` is the object's 409 for a stale resourceVersion.
 */
export function applyScale(k: KindInfo, obj: KubeObject, scale: KubeObject, conflict: () => ApiError): KubeObject {
  if ((scale.apiVersion !== undefined && scale.apiVersion !== SCALE_API_VERSION) || (scale.kind ?? 'Scale') !== 'Scale')
    throw new ApiError('BadRequest', `the body of the request is not an ${SCALE_API_VERSION} Scale`);
  const name = obj.metadata.name ?? '';
  const replicas = asObject(scale.spec)?.replicas ?? 0;
  if (typeof replicas !== 'number' || !Number.isInteger(replicas))
    throw new ApiError(
      'BadRequest',
      `Scale in version "v1" cannot be handled as a Scale: json: cannot unmarshal ${typeof replicas} into Go struct field ScaleSpec.spec.replicas of type int32`,
    );
  if (replicas < 0)
    throw invalid('Scale', 'autoscaling', name, [
      invalidField('spec.replicas', replicas, 'must be greater than or equal to 0'),
    ]);
  const uid = scale.metadata.uid ?? '';
  if (uid !== '' && uid !== obj.metadata.uid)
    throw new ApiError(
      'Conflict',
      `Operation cannot be fulfilled on ${k.plural}/scale.${k.group} "${name}": Precondition failed: UID in precondition: ${uid}, UID in object meta: ${obj.metadata.uid ?? ''}`,
      { name, group: k.group, kind: `${k.plural}/scale` },
    );
  const rv = scale.metadata.resourceVersion ?? '';
  if (rv !== '' && rv !== obj.metadata.resourceVersion) throw conflict();
  const next = structuredClone(obj);
  next.spec = { ...(asObject(next.spec) ?? {}), replicas };
  return next;
}
