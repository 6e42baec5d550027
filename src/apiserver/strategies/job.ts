import { isDeepStrictEqual } from 'node:util';
import type { StatusCause } from '../api-error.js';
import type { Strategy } from './strategy.js';
import type { KubeObject } from '../kube-object.js';
import { child, invalid, jsonValue, notSupported, required } from '../validation/field-errors.js';
import { asNumber, asObject, asString, objectField, setDefault } from '../validation/json-fields.js';
import type { JsonObject } from '../validation/json-fields.js';
import { goLabelSelector } from '../validation/label-selector.js';
import { immutable } from '../validation/object-meta.js';
import { defaultPodTemplate, oneOf } from '../validation/pod-spec.js';
import { nonNegative, validateSelectorAndTemplate } from '../validation/replicated-spec.js';
import { generationHooks } from './generation.js';

/**
 * batch/v1 Jobs, after k8s.io/kubernetes `pkg/registry/batch/job/strategy.go` (generation 1 on create, bumped
 * by spec changes; status kept on update; unless `manualSelector` is set, the selector is generated from the
 * Job's uid, `generateSelector`, which upstream does in `Validate` since the uid exists only then),
 * `pkg/apis/batch/v1/defaults.go` (`SetDefaults_Job`) and `pkg/apis/batch/validation/validation.go`
 * (`ValidateJob`, `ValidateJobSpecUpdate`: selector, completions, completion mode and template are immutable).
 */

/** A failed pod is retried 6 times before the Job fails (`SetDefaults_Job`). */
export const DEFAULT_BACKOFF_LIMIT = 6;

export const JOB_NAME_LABELS = ['job-name', 'batch.kubernetes.io/job-name'];
export const CONTROLLER_UID_LABELS = ['controller-uid', 'batch.kubernetes.io/controller-uid'];
/** The label generated selectors match on. */
export const CONTROLLER_UID_LABEL = 'batch.kubernetes.io/controller-uid';

const COMPLETION_MODES = ['NonIndexed', 'Indexed'];
const JOB_RESTART_POLICIES = ['OnFailure', 'Never'];

function specOf(obj: KubeObject): JsonObject {
  return asObject(obj.spec) ?? {};
}

function defaultJob(obj: KubeObject): void {
  const spec = objectField(obj, 'spec');
  if (spec.completions === undefined && spec.parallelism === undefined) spec.completions = 1;
  setDefault(spec, 'parallelism', 1);
  setDefault(spec, 'backoffLimit', DEFAULT_BACKOFF_LIMIT);
  setDefault(spec, 'completionMode', 'NonIndexed');
  setDefault(spec, 'suspend', false);
  setDefault(spec, 'podReplacementPolicy', spec.podFailurePolicy === undefined ? 'TerminatingOrFailed' : 'Failed');
  const template = objectField(spec, 'template');
  const templateLabels = asObject(asObject(template.metadata)?.labels);
  if (templateLabels !== undefined && Object.keys(obj.metadata.labels ?? {}).length === 0)
    obj.metadata.labels = { ...(templateLabels as Record<string, string>) };
  defaultPodTemplate(template);
}

function manualSelector(spec: JsonObject): boolean {
  return spec.manualSelector === true;
}

/** Labels the template with the Job's name and uid and selects on the uid (`generateSelector`). */
function generateSelector(obj: KubeObject): void {
  const uid = asString(obj.metadata.uid) ?? '';
  const spec = objectField(obj, 'spec');
  const meta = objectField(objectField(spec, 'template'), 'metadata');
  const labels = objectField(meta, 'labels');
  for (const l of JOB_NAME_LABELS) setDefault(labels, l, obj.metadata.name);
  for (const l of CONTROLLER_UID_LABELS) setDefault(labels, l, uid);
  const matchLabels = objectField(objectField(spec, 'selector'), 'matchLabels');
  setDefault(matchLabels, CONTROLLER_UID_LABEL, uid);
}

function validateGeneratedSelector(obj: KubeObject): StatusCause[] {
  const spec = specOf(obj);
  const selector = asObject(spec.selector);
  if (manualSelector(spec) || selector === undefined) return [];
  const uid = asString(obj.metadata.uid) ?? '';
  if (uid === '') return [required('metadata.uid')];
  const errs: StatusCause[] = [];
  const labels = asObject(asObject(asObject(spec.template)?.metadata)?.labels) ?? {};
  const at = `spec.template.metadata.labels[${CONTROLLER_UID_LABEL}]`;
  if (labels[CONTROLLER_UID_LABEL] === undefined) errs.push(required(at, `must be '${uid}'`));
  else if (labels[CONTROLLER_UID_LABEL] !== uid) errs.push(invalid(at, jsonValue(labels), `must be '${uid}'`));
  if (!isDeepStrictEqual(selector, { matchLabels: { [CONTROLLER_UID_LABEL]: uid } }))
    errs.push(invalid('spec.selector', goLabelSelector(selector), '`selector` not auto-generated'));
  return errs;
}

/** The parts of a JobSpec a CronJob's `jobTemplate` shares: counts, deadline, completion mode, pod restart policy. */
export function validateJobSpecCommon(spec: JsonObject, path: string): StatusCause[] {
  const errs: StatusCause[] = [];
  for (const f of ['parallelism', 'completions', 'backoffLimit']) errs.push(...nonNegative(spec[f], child(path, f)));
  const deadline = asNumber(spec.activeDeadlineSeconds);
  if (deadline !== undefined && deadline <= 0)
    errs.push(invalid(child(path, 'activeDeadlineSeconds'), deadline, 'must be greater than zero'));
  if (spec.completionMode !== undefined)
    errs.push(...oneOf(spec.completionMode, child(path, 'completionMode'), COMPLETION_MODES));
  const restartPolicy = asString(asObject(asObject(spec.template)?.spec)?.restartPolicy) ?? '';
  if (restartPolicy !== '' && !JOB_RESTART_POLICIES.includes(restartPolicy))
    errs.push(notSupported(child(path, 'template.spec.restartPolicy'), restartPolicy, JOB_RESTART_POLICIES));
  return errs;
}

function validateJob(obj: KubeObject): StatusCause[] {
  const spec = specOf(obj);
  return [
    ...validateGeneratedSelector(obj),
    ...validateJobSpecCommon(spec, 'spec'),
    ...validateSelectorAndTemplate(spec, 'spec', true),
  ];
}

export const jobStrategy: Strategy = {
  ...generationHooks(defaultJob, {}),
  // batch/v1 Jobs keep their pods unless the caller asks otherwise (kubernetes pkg/registry/batch/job/strategy.go,
  // kept for compatibility); kubectl delete asks for Background.
  defaultPropagationPolicy: 'Orphan',
  validate(obj) {
    if (!manualSelector(specOf(obj)) && (asString(obj.metadata.uid) ?? '') !== '') generateSelector(obj);
    return validateJob(obj);
  },
  validateUpdate(obj, old) {
    const spec = specOf(obj);
    const before = specOf(old);
    const selector = asObject(spec.selector);
    return [
      ...validateJob(obj),
      ...immutable('spec.completions', spec.completions ?? null, before.completions ?? null),
      ...immutable('spec.selector', selector ?? null, asObject(before.selector) ?? null, goLabelSelector(selector)),
      ...immutable('spec.template', spec.template ?? null, before.template ?? null),
      ...immutable('spec.completionMode', spec.completionMode ?? null, before.completionMode ?? null),
    ];
  },
};
