import { isDeepStrictEqual } from 'node:util';
import type { StatusCause } from '../api-error.js';
import type { Strategy } from './strategy.js';
import type { KubeObject } from '../kube-object.js';
import { child, forbidden } from '../validation/field-errors.js';
import { asObject, objectField, setDefault } from '../validation/json-fields.js';
import { defaultPodTemplate, oneOf } from '../validation/pod-spec.js';
import { nonNegative, validateReplicatedTemplate, validateSelectorAndTemplate } from '../validation/replicated-spec.js';
import { generationHooks } from './generation.js';

/**
 * apps/v1 StatefulSets, after k8s.io/kubernetes `pkg/registry/apps/statefulset/strategy.go` (generation 1 on
 * create and bumped by spec changes, status kept on update), `pkg/apis/apps/v1/defaults.go`
 * (`SetDefaults_StatefulSet`: OrderedReady, RollingUpdate from partition 0, one replica, 10 revisions, claims
 * retained) and `pkg/apis/apps/validation/validation.go` (`ValidateStatefulSetSpec`, and
 * `ValidateStatefulSetUpdate`: only replicas, ordinals, template, updateStrategy,
 * persistentVolumeClaimRetentionPolicy and minReadySeconds may change).
 */

const POD_MANAGEMENT_POLICIES = ['OrderedReady', 'Parallel'];
const UPDATE_STRATEGIES = ['RollingUpdate', 'OnDelete'];
/** The spec fields an update may change (`ValidateStatefulSetUpdate`). */
const MUTABLE = [
  'replicas',
  'ordinals',
  'template',
  'updateStrategy',
  'persistentVolumeClaimRetentionPolicy',
  'minReadySeconds',
];

function defaultStatefulSet(obj: KubeObject): void {
  const spec = objectField(obj, 'spec');
  setDefault(spec, 'podManagementPolicy', 'OrderedReady');
  const strategy = objectField(spec, 'updateStrategy');
  setDefault(strategy, 'type', 'RollingUpdate');
  if (strategy.type === 'RollingUpdate') setDefault(objectField(strategy, 'rollingUpdate'), 'partition', 0);
  setDefault(spec, 'replicas', 1);
  setDefault(spec, 'revisionHistoryLimit', 10);
  const retention = objectField(spec, 'persistentVolumeClaimRetentionPolicy');
  setDefault(retention, 'whenDeleted', 'Retain');
  setDefault(retention, 'whenScaled', 'Retain');
  defaultPodTemplate(objectField(spec, 'template'));
}

function validateStatefulSet(obj: KubeObject): StatusCause[] {
  const spec = asObject(obj.spec) ?? {};
  const errs: StatusCause[] = [];
  errs.push(...oneOf(spec.podManagementPolicy, 'spec.podManagementPolicy', POD_MANAGEMENT_POLICIES));
  const strategy = asObject(spec.updateStrategy) ?? {};
  errs.push(...oneOf(strategy.type, 'spec.updateStrategy.type', UPDATE_STRATEGIES));
  if (strategy.type === 'OnDelete' && strategy.rollingUpdate !== undefined && strategy.rollingUpdate !== null)
    errs.push(forbidden('spec.updateStrategy.rollingUpdate', "only allowed for updateStrategy 'RollingUpdate'"));
  const partition = asObject(strategy.rollingUpdate)?.partition;
  errs.push(...nonNegative(partition, child('spec.updateStrategy.rollingUpdate', 'partition')));
  errs.push(...nonNegative(spec.replicas, 'spec.replicas'));
  errs.push(...nonNegative(spec.minReadySeconds, 'spec.minReadySeconds'));
  errs.push(...validateSelectorAndTemplate(spec, 'spec', false, 'statefulset'));
  errs.push(...validateReplicatedTemplate(spec, 'spec', 'StatefulSet'));
  return errs;
}

function validateStatefulSetUpdate(obj: KubeObject, old: KubeObject): StatusCause[] {
  const strip = (o: KubeObject): Record<string, unknown> =>
    Object.fromEntries(Object.entries(asObject(o.spec) ?? {}).filter(([k]) => !MUTABLE.includes(k)));
  if (isDeepStrictEqual(strip(obj), strip(old))) return validateStatefulSet(obj);
  return [
    ...validateStatefulSet(obj),
    forbidden(
      'spec',
      "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
    ),
  ];
}

export const statefulSetStrategy: Strategy = {
  ...generationHooks(defaultStatefulSet, { replicas: 0, availableReplicas: 0 }),
  validate: validateStatefulSet,
  validateUpdate: validateStatefulSetUpdate,
};
