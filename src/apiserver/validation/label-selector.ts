import type { StatusCause } from '../api-error.js';
import { child, forbidden, index, invalid, required } from './field-errors.js';
import type { GoValue } from './field-errors.js';
import { isQualifiedName } from './formats.js';
import { asArray, asObject, asString } from './json-fields.js';
import type { JsonObject } from './json-fields.js';
import { validateLabels } from './object-meta.js';
import { labelSelectorFromObject } from '../label-selector.js';

/**
 * `metav1.LabelSelector` in workload specs: its validation after k8s.io/apimachinery
 * `pkg/apis/meta/v1/validation/validation.go` (`ValidateLabelSelector`), whether it matches a label set after
 * `LabelSelectorAsSelector`, and its Go rendering in error values.
 */

export function validateLabelSelector(selector: JsonObject, path: string): StatusCause[] {
  const errs = validateLabels(asObject(selector.matchLabels), child(path, 'matchLabels'));
  (asArray(selector.matchExpressions) ?? []).forEach((entry, i) => {
    const expr = asObject(entry) ?? {};
    const at = index(child(path, 'matchExpressions'), i);
    const values = asArray(expr.values) ?? [];
    const operator = asString(expr.operator) ?? '';
    if (operator === 'In' || operator === 'NotIn') {
      if (values.length === 0)
        errs.push(required(child(at, 'values'), "must be specified when `operator` is 'In' or 'NotIn'"));
    } else if (operator === 'Exists' || operator === 'DoesNotExist') {
      if (values.length > 0)
        errs.push(forbidden(child(at, 'values'), "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"));
    } else {
      errs.push(invalid(child(at, 'operator'), operator, 'not a valid selector operator'));
    }
    const k = asString(expr.key) ?? '';
    for (const m of isQualifiedName(k)) errs.push(invalid(child(at, 'key'), k, m));
  });
  return errs;
}

/** Whether `LabelSelectorAsSelector` accepts the selector: known operators with the values each needs. */
export function selectorParses(selector: JsonObject): boolean {
  return validateLabelSelector(selector, '').length === 0;
}

/** True when the selector has neither match labels nor expressions (it selects everything). */
export function selectorIsEmpty(selector: JsonObject): boolean {
  return (
    Object.keys(asObject(selector.matchLabels) ?? {}).length === 0 &&
    (asArray(selector.matchExpressions) ?? []).length === 0
  );
}

/** Whether `labels` satisfy every match label and expression of `selector` (one that does not parse matches nothing). */
export function selectorMatches(selector: JsonObject, labels: Record<string, unknown>): boolean {
  if (!selectorParses(selector)) return false;
  const strings = Object.fromEntries(
    Object.entries(labels).filter((e): e is [string, string] => typeof e[1] === 'string'),
  );
  return labelSelectorFromObject(selector).matches(strings);
}

/**
 * A `*metav1.LabelSelector` as a field error prints it: through its generated `String()` method
 * (`&LabelSelector{MatchLabels:map[string]string{app: web,},MatchExpressions:[]LabelSelectorRequirement{},}`).
 */
export function goLabelSelector(selector: JsonObject | undefined): GoValue {
  if (selector === undefined) return { go: 'null' };
  const labels = asObject(selector.matchLabels) ?? {};
  const labelText = Object.keys(labels)
    .sort()
    .map((k) => `${k}: ${String(labels[k])},`)
    .join('');
  const exprText = (asArray(selector.matchExpressions) ?? [])
    .map((e) => {
      const x = asObject(e) ?? {};
      const values = (asArray(x.values) ?? []).map(String).join(' ');
      return `LabelSelectorRequirement{Key:${asString(x.key) ?? ''},Operator:${asString(x.operator) ?? ''},Values:[${values}],},`;
    })
    .join('');
  return {
    go: `&LabelSelector{MatchLabels:map[string]string{${labelText}},MatchExpressions:[]LabelSelectorRequirement{${exprText}},}`,
  };
}
