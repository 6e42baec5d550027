import type { StatusCause } from '../api-error.js';
import type { Strategy } from './strategy.js';
import type { KubeObject } from '../kube-object.js';
import { child, duplicate, invalid, required } from '../validation/field-errors.js';
import { asArray, asNumber, asObject, asString, objectsOf, setDefault } from '../validation/json-fields.js';
import { isDns1123Subdomain } from '../validation/formats.js';
import { oneOf } from '../validation/pod-spec.js';

/**
 * admissionregistration.k8s.io/v1 ValidatingWebhookConfigurations and MutatingWebhookConfigurations, stored with
 * the defaults of k8s.io/kubernetes `pkg/apis/admissionregistration/v1/defaults.go` (failurePolicy Fail,
 * matchPolicy Equivalent, empty namespace and object selectors, 10 s timeout, rules of scope `*`, service port
 * 443, and for mutating webhooks reinvocationPolicy Never) and checked as `pkg/apis/admissionregistration/
 * validation/validation.go` checks what a client most often gets wrong: a webhook name of three or more DNS
 * segments, unique; one of `url` or `service`; `sideEffects` and `admissionReviewVersions` given; policies from
 * their enums; a timeout of 1 to 30 s. The API server stores them; calling them is the admission chain's work.
 */

const FAILURE_POLICIES = ['Ignore', 'Fail'];
const MATCH_POLICIES = ['Exact', 'Equivalent'];
const SIDE_EFFECTS = ['None', 'NoneOnDryRun'];
const REINVOCATION_POLICIES = ['Never', 'IfNeeded'];
const OPERATIONS = ['*', 'CREATE', 'UPDATE', 'DELETE', 'CONNECT'];
const REVIEW_VERSIONS = ['v1', 'v1beta1'];

function defaultWebhooks(obj: KubeObject, mutating: boolean): void {
  for (const w of objectsOf(obj.webhooks)) {
    setDefault(w, 'failurePolicy', 'Fail');
    setDefault(w, 'matchPolicy', 'Equivalent');
    setDefault(w, 'namespaceSelector', {});
    setDefault(w, 'objectSelector', {});
    setDefault(w, 'timeoutSeconds', 10);
    if (mutating) setDefault(w, 'reinvocationPolicy', 'Never');
    for (const r of objectsOf(w.rules)) setDefault(r, 'scope', '*');
    const service = asObject(asObject(w.clientConfig)?.service);
    if (service !== undefined) setDefault(service, 'port', 443);
  }
}

function validateWebhooks(obj: KubeObject, mutating: boolean): StatusCause[] {
  const errs: StatusCause[] = [];
  const names = new Set<string>();
  objectsOf(obj.webhooks).forEach((w, i) => {
    const at = `webhooks[${String(i)}]`;
    const name = asString(w.name) ?? '';
    if (name === '') errs.push(required(child(at, 'name')));
    else if (isDns1123Subdomain(name).length > 0 || name.split('.').length < 3)
      errs.push(invalid(child(at, 'name'), name, 'should be a domain with at least three segments separated by dots'));
    else if (names.has(name)) errs.push(duplicate(child(at, 'name'), name));
    names.add(name);
    const client = asObject(w.clientConfig) ?? {};
    const targets = [client.url, client.service].filter((x) => x !== undefined && x !== null).length;
    if (targets !== 1) errs.push(required(child(at, 'clientConfig'), 'exactly one of url or service is required'));
    const versions = asArray(w.admissionReviewVersions) ?? [];
    if (!versions.some((v) => REVIEW_VERSIONS.includes(String(v))))
      errs.push(required(child(at, 'admissionReviewVersions'), `must specify one of ${REVIEW_VERSIONS.join(', ')}`));
    errs.push(...oneOf(w.sideEffects, child(at, 'sideEffects'), SIDE_EFFECTS));
    errs.push(...oneOf(w.failurePolicy, child(at, 'failurePolicy'), FAILURE_POLICIES));
    errs.push(...oneOf(w.matchPolicy, child(at, 'matchPolicy'), MATCH_POLICIES));
    if (mutating) errs.push(...oneOf(w.reinvocationPolicy, child(at, 'reinvocationPolicy'), REINVOCATION_POLICIES));
    const timeout = asNumber(w.timeoutSeconds);
    if (timeout !== undefined && (timeout < 1 || timeout > 30))
      errs.push(invalid(child(at, 'timeoutSeconds'), timeout, 'the timeout value must be between 1 and 30 seconds'));
    objectsOf(w.rules).forEach((r, j) => {
      for (const op of asArray(r.operations) ?? [])
        errs.push(...oneOf(op, child(`${at}.rules[${String(j)}]`, 'operations'), OPERATIONS));
    });
  });
  return errs;
}

function webhookConfigurationStrategy(mutating: boolean): Strategy {
  return {
    prepareForCreate: (obj) => defaultWebhooks(obj, mutating),
    prepareForUpdate: (obj) => defaultWebhooks(obj, mutating),
    validate: (obj) => validateWebhooks(obj, mutating),
    validateUpdate: (obj) => validateWebhooks(obj, mutating),
  };
}

export const validatingWebhookConfigurationStrategy = webhookConfigurationStrategy(false);
export const mutatingWebhookConfigurationStrategy = webhookConfigurationStrategy(true);
