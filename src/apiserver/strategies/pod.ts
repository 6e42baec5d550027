import { isDeepStrictEqual } from 'node:util';
import type { StatusCause } from '../api-error.js';
import type { Strategy } from './strategy.js';
import type { KubeObject } from '../kube-object.js';
import { child, forbidden, index, invalid, required } from '../validation/field-errors.js';
import { inclusiveRangeError } from '../validation/formats.js';
import { asArray, asNumber, asObject, asString, objectField, setDefault } from '../validation/json-fields.js';
import type { JsonObject } from '../validation/json-fields.js';
import { DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS, defaultPodSpec, validatePodSpec } from '../validation/pod-spec.js';
import { nextGeneration, startGeneration } from './generation.js';

/**
 * Pods, after k8s.io/kubernetes `pkg/registry/core/pod/strategy.go` (create starts `Pending` with a QoS class,
 * generation 1; updates keep status) and `pkg/apis/core/validation/validation.go` (`ValidatePodUpdate`: only
 * images, a shorter `activeDeadlineSeconds`, added tolerations and a grace period of 1 after a negative one may
 * change). The ServiceAccount admission plugin's default (`serviceAccountName: default`) is applied on create.
 */

/** The account a pod runs as when it names none (plugin/pkg/admission/serviceaccount `DefaultServiceAccountName`). */
export const DEFAULT_SERVICE_ACCOUNT_NAME = 'default';

const MAX_INT32 = 2147483647;

const UPDATABLE_POD_SPEC_FIELDS = [
  '`spec.containers[*].image`',
  '`spec.initContainers[*].image`',
  '`spec.activeDeadlineSeconds`',
  '`spec.tolerations` (only additions to existing tolerations)',
  '`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)',
];

function specOf(obj: KubeObject): JsonObject {
  return asObject(obj.spec) ?? {};
}

/** The pod's QoS class from its containers' cpu and memory requests and limits (`qos.ComputePodQOS`). */
export function podQosClass(spec: JsonObject): string {
  const containers = [...(asArray(spec.containers) ?? []), ...(asArray(spec.initContainers) ?? [])].map(
    (c) => asObject(c) ?? {},
  );
  let any = false;
  let guaranteed = true;
  for (const c of containers) {
    const resources = asObject(c.resources) ?? {};
    const limits = asObject(resources.limits) ?? {};
    const requests = asObject(resources.requests) ?? {};
    for (const r of ['cpu', 'memory']) {
      if (limits[r] !== undefined || requests[r] !== undefined) any = true;
      if (
        limits[r] === undefined ||
        (requests[r] !== undefined && JSON.stringify(requests[r]) !== JSON.stringify(limits[r]))
      )
        guaranteed = false;
    }
  }
  if (!any) return 'BestEffort';
  return guaranteed ? 'Guaranteed' : 'Burstable';
}

function validateContainerUpdates(
  now: unknown[],
  before: unknown[],
  path: string,
): { errs: StatusCause[]; stop: boolean } {
  if (now.length !== before.length)
    return { errs: [forbidden(path, 'pod updates may not add or remove containers')], stop: true };
  const errs: StatusCause[] = [];
  now.forEach((entry, i) => {
    const image = asString(asObject(entry)?.image) ?? '';
    const at = child(index(path, i), 'image');
    if (image === '') errs.push(required(at));
    if (image.trim() !== image) errs.push(invalid(at, image, 'must not have leading or trailing whitespace'));
  });
  return { errs, stop: false };
}

/** Tolerations already present must stay, but for their `tolerationSeconds`; new ones may be added (`validateOnlyAddedTolerations`). */
function validateOnlyAddedTolerations(now: unknown[], before: unknown[], path: string): StatusCause[] {
  const withoutSeconds = (t: unknown): unknown => ({ ...asObject(t), tolerationSeconds: undefined });
  for (const old of before) {
    if (!now.some((t) => isDeepStrictEqual(withoutSeconds(t), withoutSeconds(old))))
      return [forbidden(path, 'existing toleration can not be modified except its tolerationSeconds')];
  }
  return [];
}

/** The spec with every field a pod update may change set to the old pod's value. */
function munged(spec: JsonObject, old: JsonObject): JsonObject {
  const out = structuredClone(spec);
  for (const list of ['containers', 'initContainers']) {
    const oldList = asArray(old[list]) ?? [];
    const newList = asArray(out[list]);
    if (newList === undefined) continue;
    newList.forEach((c, i) => {
      const container = asObject(c);
      const oldImage = asObject(oldList[i])?.image;
      if (container === undefined) return;
      if (oldImage === undefined) delete container.image;
      else container.image = oldImage;
    });
  }
  out.activeDeadlineSeconds = old.activeDeadlineSeconds;
  out.tolerations = old.tolerations;

  const oldGrace = asNumber(old.terminationGracePeriodSeconds);
  if (oldGrace !== undefined && oldGrace < 0 && out.terminationGracePeriodSeconds === 1)
    out.terminationGracePeriodSeconds = oldGrace;
  return Object.fromEntries(Object.entries(out).filter(([, v]) => v !== undefined));
}

/** One `-`/`+` line pair per top-level spec field that differs, in place of upstream's `cmp.Diff`. */
function specDiff(before: JsonObject, after: JsonObject): string {
  const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort();
  const lines: string[] = [];
  for (const k of keys) {
    if (isDeepStrictEqual(before[k], after[k])) continue;
    if (before[k] !== undefined) lines.push(`-  ${k}: ${JSON.stringify(before[k])}`);
    if (after[k] !== undefined) lines.push(`+  ${k}: ${JSON.stringify(after[k])}`);
  }
  return lines.join('\n');
}

export function validatePodUpdate(obj: KubeObject, old: KubeObject): StatusCause[] {
  const spec = specOf(obj);
  const oldSpec = specOf(old);
  const errs = validatePodSpec(spec, 'spec');
  for (const list of ['containers', 'initContainers']) {
    const r = validateContainerUpdates(asArray(spec[list]) ?? [], asArray(oldSpec[list]) ?? [], `spec.${list}`);
    errs.push(...r.errs);
    if (r.stop) return errs;
  }
  const deadline = asNumber(spec.activeDeadlineSeconds);
  const oldDeadline = asNumber(oldSpec.activeDeadlineSeconds);
  if (deadline !== undefined) {
    if (deadline < 0 || deadline > MAX_INT32)
      return [...errs, invalid('spec.activeDeadlineSeconds', deadline, inclusiveRangeError(0, MAX_INT32))];
    if (oldDeadline !== undefined && oldDeadline < deadline)
      return [...errs, invalid('spec.activeDeadlineSeconds', deadline, 'must be less than or equal to previous value')];
  } else if (oldDeadline !== undefined) {
    errs.push(invalid('spec.activeDeadlineSeconds', null, 'must not update from a positive integer to nil value'));
  }
  errs.push(
    ...validateOnlyAddedTolerations(
      asArray(spec.tolerations) ?? [],
      asArray(oldSpec.tolerations) ?? [],
      'spec.tolerations',
    ),
  );
  if (isDeepStrictEqual(spec, oldSpec)) return errs;
  const m = munged(spec, oldSpec);
  if (!isDeepStrictEqual(m, oldSpec))
    errs.push(
      forbidden(
        'spec',
        `pod updates may not change fields other than ${UPDATABLE_POD_SPEC_FIELDS.join(',')}\n${specDiff(oldSpec, m)}`,
      ),
    );
  return errs;
}

/**
 * The grace period a pod DELETE gives (`CheckGracefulDelete`): the one asked for, else the pod's
 * `terminationGracePeriodSeconds`; 0 for a pod no node runs (unscheduled, or Succeeded/Failed), since no kubelet
 * would finish its deletion; a negative period is 1.
 */
export function podGracePeriod(obj: KubeObject, requested: number | undefined): number {
  const spec = specOf(obj);
  const phase = asString(asObject(obj.status)?.phase);
  if ((asString(spec.nodeName) ?? '') === '' || phase === 'Succeeded' || phase === 'Failed') return 0;
  const period = requested ?? asNumber(spec.terminationGracePeriodSeconds) ?? DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS;
  return period < 0 ? 1 : period;
}

export const podStrategy: Strategy = {
  prepareForCreate(obj) {
    const spec = objectField(obj, 'spec');
    defaultPodSpec(spec);
    setDefault(spec, 'serviceAccountName', DEFAULT_SERVICE_ACCOUNT_NAME);
    setDefault(spec, 'serviceAccount', spec.serviceAccountName);
    startGeneration(obj, { phase: 'Pending', qosClass: podQosClass(spec) });
  },
  prepareForUpdate(obj, old) {
    defaultPodSpec(objectField(obj, 'spec'));
    nextGeneration(obj, old);
  },
  validate(obj) {
    return validatePodSpec(specOf(obj), 'spec');
  },
  validateUpdate: validatePodUpdate,
  checkGracefulDelete: podGracePeriod,
};
