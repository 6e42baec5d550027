import type { StatusCause } from '../api-error.js';
import type { Strategy } from './strategy.js';
import type { KubeObject } from '../kube-object.js';
import { child, forbidden, index, invalid, notSupported, required } from '../validation/field-errors.js';
import { nameIsPathSegment } from '../validation/formats.js';
import {
  asArray,
  asNumber,
  asObject,
  asString,
  objectField,
  objectsOf,
  setDefault,
} from '../validation/json-fields.js';
import type { JsonObject } from '../validation/json-fields.js';
import { keepStatus } from './generation.js';

/**
 * autoscaling/v2 HorizontalPodAutoscalers, defaulted as kubernetes `pkg/apis/autoscaling/v2/defaults.go` does
 * (minReplicas 1; no metrics means 80% average CPU; a behavior's missing scaling rules filled in), stored as
 * `pkg/registry/autoscaling/horizontalpodautoscaler/strategy.go` stores them (an empty status on create, status
 * only through the `status` subresource), and checked as `pkg/apis/autoscaling/validation/validation.go` checks
 * them: minReplicas at least 1, maxReplicas at least 1 and minReplicas; a scale target with a kind and a name;
 * each metric of a known type carrying that type's source alone, with its name and a well-formed target; scaling
 * policies within bounds. There is no HPA controller: nothing reads metrics or scales by them (the `scale`
 * subresource it would use is served); Istio's gateway controller creates them and expects them stored.
 */

const METRIC_TYPES = ['ContainerResource', 'External', 'Object', 'Pods', 'Resource'];
/** Each metric type's source field. */
const SOURCE_FIELDS: Readonly<Record<string, string>> = {
  Object: 'object',
  Pods: 'pods',
  Resource: 'resource',
  External: 'external',
  ContainerResource: 'containerResource',
};
const TARGET_TYPES = ['Utilization', 'Value', 'AverageValue'];
const SELECT_POLICIES = ['Disabled', 'Max', 'Min'];
const POLICY_TYPES = ['Percent', 'Pods'];
const MAX_PERIOD_SECONDS = 1800;
const MAX_STABILIZATION_WINDOW_SECONDS = 3600;

/** defaults.go's scaling rules: scale up by 4 pods or 100% every 15 s, down by 100% every 15 s, the larger change. */
const DEFAULT_RULES = {
  scaleUp: {
    stabilizationWindowSeconds: 0,
    selectPolicy: 'Max',
    policies: [
      { type: 'Pods', value: 4, periodSeconds: 15 },
      { type: 'Percent', value: 100, periodSeconds: 15 },
    ],
  },
  scaleDown: { selectPolicy: 'Max', policies: [{ type: 'Percent', value: 100, periodSeconds: 15 }] },
} as const;

function defaultHorizontalPodAutoscaler(obj: KubeObject): void {
  const spec = objectField(obj, 'spec');
  setDefault(spec, 'minReplicas', 1);
  if ((asArray(spec.metrics) ?? []).length === 0)
    spec.metrics = [
      { type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 80 } } },
    ];
  const behavior = asObject(spec.behavior);
  if (behavior === undefined) return;
  for (const direction of ['scaleUp', 'scaleDown'] as const) {
    const rules = objectField(behavior, direction);
    for (const [k, v] of Object.entries(DEFAULT_RULES[direction])) setDefault(rules, k, structuredClone(v));
  }
}

/** A scale target or described object (`ValidateCrossVersionObjectReference`). */
function validateReference(ref: JsonObject, path: string): StatusCause[] {
  const errs: StatusCause[] = [];
  for (const field of ['kind', 'name']) {
    const v = asString(ref[field]) ?? '';
    if (v === '') errs.push(required(child(path, field)));
    else for (const m of nameIsPathSegment(v, false)) errs.push(invalid(child(path, field), v, m));
  }
  return errs;
}

/** A quantity's sign, as `Quantity.Sign()`: its leading minus, or zero when every digit is. */
function quantitySign(v: unknown): number {
  const s = typeof v === 'number' ? String(v) : (asString(v) ?? '');
  if (!/[1-9]/.test(s.replace(/e.*$|[a-zA-Z]+$/, ''))) return 0;
  return s.startsWith('-') ? -1 : 1;
}

function validateTarget(target: JsonObject, path: string): StatusCause[] {
  const errs: StatusCause[] = [];
  const type = asString(target.type) ?? '';
  if (type === '') errs.push(required(child(path, 'type'), 'must specify a metric target type'));
  if (!TARGET_TYPES.includes(type))
    errs.push(invalid(child(path, 'type'), type, 'must be either Utilization, Value, or AverageValue'));
  for (const field of ['value', 'averageValue'])
    if (target[field] !== undefined && target[field] !== null && quantitySign(target[field]) !== 1)
      // A Quantity prints through its String(): bare, unquoted.
      errs.push(
        invalid(child(path, field), { go: JSON.stringify(target[field]).replace(/^"|"$/g, '') }, 'must be positive'),
      );
  const utilization = asNumber(target.averageUtilization);
  if (utilization !== undefined && utilization < 1)
    errs.push(invalid(child(path, 'averageUtilization'), utilization, 'must be greater than 0'));
  return errs;
}

const present = (v: unknown): boolean => v !== undefined && v !== null;

function validateMetricName(source: JsonObject, path: string): StatusCause[] {
  const name = asString(asObject(source.metric)?.name) ?? '';
  return name === '' ? [required(child(child(path, 'metric'), 'name'), 'must specify a metric name')] : [];
}

/** One metric's source, by its type (`validateObjectSource`, `validatePodsSource`, `validateResourceSource`, ...). */
function validateSource(type: string, source: JsonObject, path: string): StatusCause[] {
  const target = asObject(source.target) ?? {};
  const targetPath = child(path, 'target');
  const errs: StatusCause[] = [];
  if (type === 'Object')
    errs.push(...validateReference(asObject(source.describedObject) ?? {}, child(path, 'describedObject')));
  if (type === 'Object' || type === 'Pods' || type === 'External') errs.push(...validateMetricName(source, path));
  if (type === 'Resource' || type === 'ContainerResource') {
    if ((asString(source.name) ?? '') === '') errs.push(required(child(path, 'name'), 'must specify a resource name'));
    if (type === 'ContainerResource' && (asString(source.container) ?? '') === '')
      errs.push(required(child(path, 'container'), 'must specify a container'));
  }
  errs.push(...validateTarget(target, targetPath));
  const value = present(target.value);
  const average = present(target.averageValue);
  const utilization = present(target.averageUtilization);
  if ((type === 'Resource' || type === 'ContainerResource') && !utilization && !average)
    errs.push(
      required(child(targetPath, 'averageUtilization'), 'must set either a target raw value or a target utilization'),
    );
  if ((type === 'Resource' || type === 'ContainerResource') && utilization && average)
    errs.push(
      forbidden(child(targetPath, 'averageValue'), 'may not set both a target raw value and a target utilization'),
    );
  if (type === 'Pods' && !average)
    errs.push(required(child(targetPath, 'averageValue'), 'must specify a positive target averageValue'));
  if (type === 'Object' && !value && !average)
    errs.push(required(child(targetPath, 'value'), 'must set either a target value or averageValue'));
  if (type === 'External' && !value && !average)
    errs.push(required(child(targetPath, 'value'), 'must set either a target value for metric or a per-pod target'));
  if (type === 'External' && value && average)
    errs.push(forbidden(child(targetPath, 'value'), 'may not set both a target value for metric and a per-pod target'));
  return errs;
}

function validateMetric(metric: JsonObject, path: string): StatusCause[] {
  const errs: StatusCause[] = [];
  const type = asString(metric.type) ?? '';
  if (type === '') errs.push(required(child(path, 'type'), 'must specify a metric source type'));
  else if (!METRIC_TYPES.includes(type)) errs.push(notSupported(child(path, 'type'), type, METRIC_TYPES));
  const given = Object.values(SOURCE_FIELDS).filter((f) => present(metric[f]));
  const expected = SOURCE_FIELDS[type];
  if (expected !== undefined) {
    const source = asObject(metric[expected]);
    if (source === undefined)
      errs.push(required(child(path, expected), 'must populate information for the given metric source'));
    else errs.push(...validateSource(type, source, child(path, expected)));
  }
  if (given.length > 1)
    for (const f of given.filter((g) => g !== expected))
      errs.push(forbidden(child(path, f), 'must populate the given metric source only'));
  return errs;
}

function validateScalingRules(rules: JsonObject, path: string): StatusCause[] {
  const errs: StatusCause[] = [];
  const window = asNumber(rules.stabilizationWindowSeconds);
  if (window !== undefined && window < 0)
    errs.push(invalid(child(path, 'stabilizationWindowSeconds'), window, 'must be greater than or equal to zero'));
  if (window !== undefined && window > MAX_STABILIZATION_WINDOW_SECONDS)
    errs.push(
      invalid(
        child(path, 'stabilizationWindowSeconds'),
        window,
        `must be less than or equal to ${MAX_STABILIZATION_WINDOW_SECONDS}`,
      ),
    );
  const select = asString(rules.selectPolicy);
  if (select !== undefined && !SELECT_POLICIES.includes(select))
    errs.push(notSupported(child(path, 'selectPolicy'), select, SELECT_POLICIES));
  const policies = objectsOf(rules.policies);
  if (policies.length === 0) errs.push(required(child(path, 'policies'), 'must specify at least one Policy'));
  policies.forEach((p, i) => {
    const at = index(child(path, 'policies'), i);
    const type = asString(p.type) ?? '';
    if (!POLICY_TYPES.includes(type)) errs.push(notSupported(child(at, 'type'), type, POLICY_TYPES));
    const value = asNumber(p.value) ?? 0;
    if (value <= 0) errs.push(invalid(child(at, 'value'), value, 'must be greater than zero'));
    const period = asNumber(p.periodSeconds) ?? 0;
    if (period <= 0) errs.push(invalid(child(at, 'periodSeconds'), period, 'must be greater than zero'));
    if (period > MAX_PERIOD_SECONDS)
      errs.push(invalid(child(at, 'periodSeconds'), period, `must be less than or equal to ${MAX_PERIOD_SECONDS}`));
  });
  return errs;
}

function validateHorizontalPodAutoscaler(obj: KubeObject): StatusCause[] {
  const spec = asObject(obj.spec) ?? {};
  const errs: StatusCause[] = [];
  const min = asNumber(spec.minReplicas);
  const max = asNumber(spec.maxReplicas) ?? 0;
  if (min !== undefined && min < 1) errs.push(invalid('spec.minReplicas', min, 'must be greater than or equal to 1'));
  if (max < 1) errs.push(invalid('spec.maxReplicas', max, 'must be greater than 0'));
  if (min !== undefined && max < min)
    errs.push(invalid('spec.maxReplicas', max, 'must be greater than or equal to `minReplicas`'));
  errs.push(...validateReference(asObject(spec.scaleTargetRef) ?? {}, 'spec.scaleTargetRef'));
  objectsOf(spec.metrics).forEach((m, i) => errs.push(...validateMetric(m, index('spec.metrics', i))));
  const behavior = asObject(spec.behavior);
  for (const direction of ['scaleUp', 'scaleDown']) {
    const rules = asObject(behavior?.[direction]);
    if (rules !== undefined) errs.push(...validateScalingRules(rules, `spec.behavior.${direction}`));
  }
  return errs;
}

export const horizontalPodAutoscalerStrategy: Strategy = {
  prepareForCreate(obj) {
    defaultHorizontalPodAutoscaler(obj);
    obj.status = { desiredReplicas: 0 };
  },
  prepareForUpdate(obj, old) {
    defaultHorizontalPodAutoscaler(obj);
    keepStatus(obj, old);
  },
  validate: validateHorizontalPodAutoscaler,
  validateUpdate: validateHorizontalPodAutoscaler,
};
