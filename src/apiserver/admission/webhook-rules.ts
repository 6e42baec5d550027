/**
 * Which admission webhooks a request goes to, as kube-apiserver decides it (k8s.io/apiserver
 * `pkg/admission/plugin/webhook/predicates/rules/rules.go`, `.../namespace/matcher.go`, `.../object/matcher.go`
 * and `generic/webhook.go`):
 * - a rule matches on operation, API group, version, resource and scope (`Cluster`, `Namespaced` or `*`). A
 *   resource is `plural` or `plural/subresource`, where either part may be `*`; without a subresource part it
 *   names no subresource, so `*` is every resource and none of their subresources;
 * - with `matchPolicy: Equivalent` a rule naming the same group and resource at another version matches too: every
 *   version of a kind is the same object here (the API server serves one), so the webhook gets it at the rule's
 *   version, as kube-apiserver converts it;
 * - the namespace selector is matched against the labels of the request's namespace, of the Namespace itself when
 *   one is written, and is not consulted for other cluster-scoped objects;
 * - the object selector is matched against the labels of the new object or of the old one;
 * - writes of webhook configurations themselves never go to webhooks, so a broken webhook cannot lock out its fix.
 */
import type { KindInfo } from '../kind-info.js';
import type { KubeObject } from '../kube-object.js';
import { asArray, asObject, asString, type JsonObject } from '../validation/json-fields.js';
import { selectorMatches } from '../validation/label-selector.js';

export type AdmissionOperation = 'CREATE' | 'UPDATE' | 'DELETE';

/** What the rules and selectors are matched against. */
export interface AdmissionTarget {
  readonly kind: KindInfo;
  readonly subresource: string | undefined;
  readonly operation: AdmissionOperation;
  readonly object: KubeObject | undefined;
  readonly oldObject: KubeObject | undefined;
  /** The labels of the request's namespace; undefined for cluster-scoped kinds or a namespace that is not there. */
  readonly namespaceLabels: Readonly<Record<string, string>> | undefined;
}

/** The group, version and resource a matched webhook is sent the object as. */
export interface MatchedVersion {
  readonly version: string;
  /** True when only an equivalent rule matched: the webhook sees the object at `version`. */
  readonly converted: boolean;
}

const EXEMPT_GROUP = 'admissionregistration.k8s.io';
const EXEMPT_KINDS = new Set(['ValidatingWebhookConfiguration', 'MutatingWebhookConfiguration']);

const strings = (v: unknown): string[] => (asArray(v) ?? []).filter((x): x is string => typeof x === 'string');
const has = (list: readonly string[], v: string): boolean => list.includes('*') || list.includes(v);

function resourceMatches(patterns: readonly string[], plural: string, subresource: string | undefined): boolean {
  const sub = subresource ?? '';
  return patterns.some((p) => {
    const [res = '', pSub = ''] = p.split('/', 2);
    if (res !== '*' && res !== plural) return false;
    if (!p.includes('/')) return sub === '';
    return pSub === '*' || pSub === sub;
  });
}

function scopeMatches(scope: string, namespaced: boolean): boolean {
  if (scope === 'Cluster') return !namespaced;
  if (scope === 'Namespaced') return namespaced;
  return true;
}

/** Whether `rule` matches `t`, at the request's version (`exact`) or at a version of its own (`equivalent`). */
function ruleMatch(rule: JsonObject, t: AdmissionTarget): 'exact' | 'equivalent' | undefined {
  const k = t.kind;
  if (!has(strings(rule.operations), t.operation)) return undefined;
  if (!has(strings(rule.apiGroups), k.group)) return undefined;
  if (!resourceMatches(strings(rule.resources), k.plural, t.subresource)) return undefined;
  if (!scopeMatches(asString(rule.scope) ?? '*', k.namespaced)) return undefined;
  return has(strings(rule.apiVersions), k.version) ? 'exact' : 'equivalent';
}

function labelsOf(o: KubeObject | undefined): Record<string, string> {
  return o?.metadata.labels ?? {};
}

function namespaceSelected(w: JsonObject, t: AdmissionTarget): boolean {
  const selector = asObject(w.namespaceSelector) ?? {};
  const isNamespace = t.kind.group === '' && t.kind.kind === 'Namespace';
  if (isNamespace) return selectorMatches(selector, labelsOf(t.object ?? t.oldObject));
  if (!t.kind.namespaced) return true;
  return selectorMatches(selector, t.namespaceLabels ?? {});
}

function objectSelected(w: JsonObject, t: AdmissionTarget): boolean {
  const selector = asObject(w.objectSelector) ?? {};
  return (
    (t.object !== undefined && selectorMatches(selector, labelsOf(t.object))) ||
    (t.oldObject !== undefined && selectorMatches(selector, labelsOf(t.oldObject)))
  );
}

/** Whether no webhook ever sees writes of kind `k` (the webhook configurations). */
export function exemptFromWebhooks(k: KindInfo): boolean {
  return k.group === EXEMPT_GROUP && EXEMPT_KINDS.has(k.kind);
}

/** Whether some rule of webhook `w` names this kind, subresource and operation, before any selector is read. */
export function rulesCouldMatch(
  w: JsonObject,
  t: Pick<AdmissionTarget, 'kind' | 'subresource' | 'operation'>,
): boolean {
  const probe = { ...t, object: undefined, oldObject: undefined, namespaceLabels: undefined };
  const equivalent = (asString(w.matchPolicy) ?? 'Equivalent') === 'Equivalent';
  return (asArray(w.rules) ?? []).some((r) => {
    const m = ruleMatch(asObject(r) ?? {}, probe);
    return m === 'exact' || (m === 'equivalent' && equivalent);
  });
}

/** The version webhook `w` gets the request at, or undefined when the webhook does not apply to it. */
export function webhookMatch(w: JsonObject, t: AdmissionTarget): MatchedVersion | undefined {
  if (exemptFromWebhooks(t.kind)) return undefined;
  const rules = (asArray(w.rules) ?? []).map((r) => asObject(r) ?? {});
  let version: MatchedVersion | undefined;
  if (rules.some((r) => ruleMatch(r, t) === 'exact')) version = { version: t.kind.version, converted: false };
  else if ((asString(w.matchPolicy) ?? 'Equivalent') === 'Equivalent') {
    const rule = rules.find((r) => ruleMatch(r, t) === 'equivalent');
    const named = strings(rule?.apiVersions)[0];
    if (named !== undefined) version = { version: named, converted: true };
  }
  if (version === undefined) return undefined;
  return namespaceSelected(w, t) && objectSelected(w, t) ? version : undefined;
}
