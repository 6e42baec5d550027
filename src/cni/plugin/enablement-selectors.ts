/**
 * Istio's ambient enablement selectors (istio cni/pkg/util/enablement_selector.go): a list of
 * `{podSelector, namespaceSelector}` pairs, each a metav1.LabelSelector (`matchLabels`, `matchExpressions` with
 * In, NotIn, Exists, DoesNotExist, as k8s.io/apimachinery LabelSelectorAsSelector reads them). A pod is selected
 * when, for some pair, its labels match the pod selector and its namespace's labels the namespace selector. An empty
 * selector matches everything; an empty list selects no pod. Istio's default (manifests/charts/istio-cni
 * values.yaml): pods labelled `istio.io/dataplane-mode=ambient`, or pods not labelled `=none` in a namespace
 * labelled `=ambient`.
 */
import { configError } from './network-config.js';
import { isRecord } from '../../lib/record.js';

type Labels = Readonly<Record<string, string>>;

interface Requirement {
  readonly key: string;
  readonly operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
  readonly values: readonly string[];
}

/** All requirements must hold (AND); none means everything matches. */
type Selector = readonly Requirement[];

export interface EnablementSelectors {
  selects(podLabels: Labels, namespaceLabels: Labels): boolean;
}

function requirementHolds(r: Requirement, labels: Labels): boolean {
  const has = Object.hasOwn(labels, r.key);
  switch (r.operator) {
    case 'In':
      return has && r.values.includes(labels[r.key]!);
    case 'NotIn':
      return !has || !r.values.includes(labels[r.key]!);
    case 'Exists':
      return has;
    case 'DoesNotExist':
      return !has;
  }
}

function parseStringList(v: unknown, field: string): string[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'string'))
    throw configError(field, 'must be a list of strings');
  return v;
}

function parseSelector(v: unknown, field: string): Selector {
  if (v === undefined || v === null) return [];
  if (!isRecord(v)) throw configError(field, 'must be a label selector object ({matchLabels, matchExpressions})');
  const reqs: Requirement[] = [];
  const matchLabels = v['matchLabels'];
  if (matchLabels !== undefined && matchLabels !== null) {
    if (!isRecord(matchLabels) || !Object.values(matchLabels).every((x) => typeof x === 'string'))
      throw configError(`${field}.matchLabels`, 'must map label keys to string values');
    for (const [key, value] of Object.entries(matchLabels))
      reqs.push({ key, operator: 'In', values: [value as string] });
  }
  const exprs = v['matchExpressions'];
  if (exprs !== undefined && exprs !== null && !Array.isArray(exprs))
    throw configError(`${field}.matchExpressions`, 'must be a list');
  ((exprs ?? []) as unknown[]).forEach((e, i) => {
    const at = `${field}.matchExpressions[${i}]`;
    if (!isRecord(e)) throw configError(at, 'must be an object ({key, operator, values})');
    const key = e['key'];
    if (typeof key !== 'string' || key === '') throw configError(`${at}.key`, 'must be a label key');
    const operator = e['operator'];
    const values = parseStringList(e['values'], `${at}.values`);
    if (operator === 'In' || operator === 'NotIn') {
      if (values.length === 0) throw configError(`${at}.values`, `must not be empty for operator ${operator}`);
    } else if (operator === 'Exists' || operator === 'DoesNotExist') {
      if (values.length > 0) throw configError(`${at}.values`, `must be empty for operator ${operator}`);
    } else {
      throw configError(
        `${at}.operator`,
        `${JSON.stringify(operator)} is not a label selector operator (In, NotIn, Exists, DoesNotExist)`,
      );
    }
    reqs.push({ key, operator, values });
  });
  return reqs;
}

/** Compiles the `enablement_selectors` field (`field` names it in errors); absent or null is the empty list. */
export function compileEnablementSelectors(v: unknown, field: string): EnablementSelectors {
  if (v !== undefined && v !== null && !Array.isArray(v))
    throw configError(field, 'must be a list of {podSelector, namespaceSelector}');
  const pairs = ((v ?? []) as unknown[]).map((s, i) => {
    if (!isRecord(s)) throw configError(`${field}[${i}]`, 'must be an object ({podSelector, namespaceSelector})');
    return {
      pod: parseSelector(s['podSelector'], `${field}[${i}].podSelector`),
      namespace: parseSelector(s['namespaceSelector'], `${field}[${i}].namespaceSelector`),
    };
  });
  const holds = (sel: Selector, labels: Labels): boolean => sel.every((r) => requirementHolds(r, labels));
  return Object.freeze({
    selects: (podLabels: Labels, namespaceLabels: Labels) =>
      pairs.some((p) => holds(p.pod, podLabels) && holds(p.namespace, namespaceLabels)),
  });
}
