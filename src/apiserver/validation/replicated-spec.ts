import type { StatusCause } from '../api-error.js';
import { child, forbidden, goStringMap, invalid, notSupported, required } from './field-errors.js';
import { asNumber, asObject } from './json-fields.js';
import type { JsonObject } from './json-fields.js';
import {
  goLabelSelector,
  selectorIsEmpty,
  selectorMatches,
  selectorParses,
  validateLabelSelector,
} from './label-selector.js';
import { validatePodTemplateSpec } from './pod-spec.js';

/**
 * The spec shared by Deployments and ReplicaSets: replicas, a required non-empty selector that must match the
 * pod template's labels, and a template whose pods restart `Always`. After k8s.io/kubernetes
 * `pkg/apis/apps/validation/validation.go` (`ValidateDeploymentSpec`, `ValidateReplicaSetSpec`,
 * `ValidatePodTemplateSpecForReplicaSet`), wording included (the ReplicaSet error also says "deployment").
 */

/** `must be greater than or equal to 0` (apimachinery `IsNegativeErrorMsg`) for a number below zero. */
export function nonNegative(v: unknown, path: string): StatusCause[] {
  const n = asNumber(v);
  return n !== undefined && n < 0 ? [invalid(path, n, 'must be greater than or equal to 0')] : [];
}

/**
 * A selector (required) and the template it must select, at `spec.selector` and `spec.template`. Replicated
 * workloads refuse an empty selector (the message names `workload` as upstream's does: ReplicaSets say
 * "deployment" too), and stop at one that does not parse; Jobs take both (`ValidateJobSpec`).
 */
export function validateSelectorAndTemplate(
  spec: JsonObject,
  path: string,
  allowEmpty = false,
  workload = 'deployment',
): StatusCause[] {
  const errs: StatusCause[] = [];
  const selector = asObject(spec.selector);
  const selectorPath = child(path, 'selector');
  if (selector === undefined) errs.push(required(selectorPath));
  else {
    errs.push(...validateLabelSelector(selector, selectorPath));
    if (!allowEmpty && selectorIsEmpty(selector))
      errs.push(invalid(selectorPath, goLabelSelector(selector), `empty selector is invalid for ${workload}`));
  }
  const parses = selector === undefined || selectorParses(selector);
  if (!parses && !allowEmpty)
    return [...errs, invalid(selectorPath, goLabelSelector(selector), 'invalid label selector')];
  const templatePath = child(path, 'template');
  const template = asObject(spec.template);
  if (template === undefined) return [...errs, required(templatePath)];
  const labels = asObject(asObject(template.metadata)?.labels);
  if (selector !== undefined && parses && !selectorIsEmpty(selector) && !selectorMatches(selector, labels ?? {}))
    errs.push(
      invalid(
        child(templatePath, 'metadata.labels'),
        goStringMap(labels),
        '`selector` does not match template `labels`',
      ),
    );
  errs.push(...validatePodTemplateSpec(template, templatePath));
  return errs;
}

/** Pods of replicated workloads restart `Always` and have no deadline; `kind` names the workload in the message. */
export function validateReplicatedTemplate(spec: JsonObject, path: string, kind = 'ReplicaSet'): StatusCause[] {
  const podSpec = asObject(asObject(spec.template)?.spec) ?? {};
  const errs: StatusCause[] = [];
  const restartPolicy = podSpec.restartPolicy;
  if (typeof restartPolicy === 'string' && restartPolicy !== '' && restartPolicy !== 'Always')
    errs.push(notSupported(child(path, 'template.spec.restartPolicy'), restartPolicy, ['Always']));
  if (podSpec.activeDeadlineSeconds !== undefined && podSpec.activeDeadlineSeconds !== null)
    errs.push(
      forbidden(
        child(path, 'template.spec.activeDeadlineSeconds'),
        `activeDeadlineSeconds in ${kind} is not Supported`,
      ),
    );
  return errs;
}

/**
 * A rolling update's maxUnavailable or maxSurge: a non-negative integer, or a percentage of at most 100%
 * (`ValidatePositiveIntOrPercent`, `IsNotMoreThan100Percent`). Absent is fine.
 */
export function validateIntOrPercent(v: unknown, path: string): StatusCause[] {
  if (v === undefined || v === null) return [];
  if (typeof v === 'number') return nonNegative(v, path);
  const s = typeof v === 'string' ? v : JSON.stringify(v);
  const m = /^(\d+)%$/.exec(s);
  if (m === null)
    return [invalid(path, s, "a valid percent string must be a numeric string followed by an ending '%'")];
  return Number(m[1]) > 100 ? [invalid(path, s, 'must not be greater than 100%')] : [];
}
