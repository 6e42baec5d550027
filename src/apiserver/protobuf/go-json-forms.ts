/**
 * How the Go types behind Kubernetes' protobuf messages show each field in JSON (the `json:"..."` tags of
 * k8s.io/api core/v1, apps/v1, batch/v1, authentication/v1, authorization/v1, policy/v1, rbac/v1 types.go and k8s.io/apimachinery meta/v1 types.go).
 * Protobuf alone cannot say this: a proto2 `optional int32` may be a Go `*int32` (shown whenever set, even as 0)
 * or an `int32` with `omitempty` (hidden when 0); a few fields have no `omitempty` and always show; embedded
 * structs are `json:",inline"` and flatten into their parent. The decoder needs these facts to produce the JSON
 * the same object would have had, so they are listed here for the messages amesh models (proto/k8s/).
 *
 * Every field not listed is a Go value with `omitempty`, or a message, list or map (shown when present or
 * non-empty). Keys are `<message full name>.<proto field name>`.
 */

/** `pointer`: a Go pointer, shown whenever set. `required`: no `omitempty`, always shown. `inline`: flattened. */
export type GoJsonForm = 'omitempty' | 'pointer' | 'required' | 'inline';

const CORE = 'k8s.io.api.core.v1';
const META = 'k8s.io.apimachinery.pkg.apis.meta.v1';

const FORMS: Readonly<Record<GoJsonForm, Readonly<Record<string, readonly string[]>>>> = {
  omitempty: {},
  pointer: {
    [`${META}.ObjectMeta`]: ['deletionGracePeriodSeconds'],
    [`${META}.OwnerReference`]: ['controller', 'blockOwnerDeletion'],
    [`${CORE}.ConfigMap`]: ['immutable'],
    [`${CORE}.Secret`]: ['immutable'],
    [`${CORE}.ServiceAccount`]: ['automountServiceAccountToken'],
    [`${CORE}.ServiceSpec`]: [
      'ipFamilyPolicy',
      'allocateLoadBalancerNodePorts',
      'loadBalancerClass',
      'internalTrafficPolicy',
      'trafficDistribution',
    ],
    [`${CORE}.ServicePort`]: ['appProtocol'],
    [`${CORE}.ClientIPConfig`]: ['timeoutSeconds'],
    [`${CORE}.LoadBalancerIngress`]: ['ipMode'],
    [`${CORE}.PodSpec`]: [
      'terminationGracePeriodSeconds',
      'activeDeadlineSeconds',
      'automountServiceAccountToken',
      'priority',
      'shareProcessNamespace',
      'runtimeClassName',
      'enableServiceLinks',
      'preemptionPolicy',
      'setHostnameAsFQDN',
      'hostUsers',
    ],
    [`${CORE}.Container`]: ['restartPolicy'],
    [`${CORE}.ConfigMapKeySelector`]: ['optional'],
    [`${CORE}.SecretKeySelector`]: ['optional'],
    [`${CORE}.ConfigMapEnvSource`]: ['optional'],
    [`${CORE}.SecretEnvSource`]: ['optional'],
    [`${CORE}.VolumeMount`]: ['mountPropagation', 'recursiveReadOnly'],
    [`${CORE}.HostPathVolumeSource`]: ['type'],
    [`${CORE}.SecretVolumeSource`]: ['defaultMode', 'optional'],
    [`${CORE}.ConfigMapVolumeSource`]: ['defaultMode', 'optional'],
    [`${CORE}.KeyToPath`]: ['mode'],
    [`${CORE}.Probe`]: ['terminationGracePeriodSeconds'],
    [`${CORE}.Toleration`]: ['tolerationSeconds'],
    [`${CORE}.PodSecurityContext`]: ['runAsUser', 'runAsNonRoot', 'fsGroup', 'runAsGroup'],
    [`${CORE}.SecurityContext`]: [
      'privileged',
      'runAsUser',
      'runAsNonRoot',
      'readOnlyRootFilesystem',
      'allowPrivilegeEscalation',
      'runAsGroup',
    ],
    'k8s.io.api.apps.v1.DeploymentSpec': ['replicas', 'revisionHistoryLimit', 'progressDeadlineSeconds'],
    'k8s.io.api.apps.v1.DeploymentStatus': ['collisionCount', 'terminatingReplicas'],
    'k8s.io.api.batch.v1.JobSpec': [
      'parallelism',
      'completions',
      'activeDeadlineSeconds',
      'manualSelector',
      'backoffLimit',
      'ttlSecondsAfterFinished',
      'completionMode',
      'suspend',
      'backoffLimitPerIndex',
      'maxFailedIndexes',
      'podReplacementPolicy',
      'managedBy',
    ],
    'k8s.io.api.batch.v1.JobStatus': ['ready', 'failedIndexes', 'terminating'],
    'k8s.io.api.batch.v1.CronJobSpec': [
      'startingDeadlineSeconds',
      'suspend',
      'successfulJobsHistoryLimit',
      'failedJobsHistoryLimit',
      'timeZone',
    ],
    'k8s.io.api.authentication.v1.TokenRequestSpec': ['expirationSeconds'],
    'k8s.io.api.policy.v1.PodDisruptionBudgetSpec': ['unhealthyPodEvictionPolicy'],
  },
  required: {
    [`${META}.OwnerReference`]: ['apiVersion', 'kind', 'name', 'uid'],
    [`${META}.LabelSelectorRequirement`]: ['key', 'operator'],
    [`${CORE}.ServicePort`]: ['port'],
    [`${CORE}.Container`]: ['name'],
    [`${CORE}.ContainerPort`]: ['containerPort'],
    [`${CORE}.EnvVar`]: ['name'],
    [`${CORE}.ObjectFieldSelector`]: ['fieldPath'],
    [`${CORE}.ResourceFieldSelector`]: ['resource'],
    [`${CORE}.ConfigMapKeySelector`]: ['key'],
    [`${CORE}.SecretKeySelector`]: ['key'],
    [`${CORE}.VolumeMount`]: ['name', 'mountPath'],
    [`${CORE}.Volume`]: ['name'],
    [`${CORE}.HostPathVolumeSource`]: ['path'],
    [`${CORE}.KeyToPath`]: ['key', 'path'],
    [`${CORE}.PersistentVolumeClaimVolumeSource`]: ['claimName'],
    [`${CORE}.HTTPHeader`]: ['name', 'value'],
    'k8s.io.api.batch.v1.CronJobSpec': ['schedule'],
    'k8s.io.api.authentication.v1.TokenRequestStatus': ['token'],
    'k8s.io.api.authorization.v1.SubjectAccessReviewStatus': ['allowed'],
    'k8s.io.api.policy.v1.PodDisruptionBudgetStatus': [
      'disruptionsAllowed',
      'currentHealthy',
      'desiredHealthy',
      'expectedPods',
    ],
    'k8s.io.api.rbac.v1.RoleRef': ['apiGroup', 'kind', 'name'],
    'k8s.io.api.rbac.v1.Subject': ['kind', 'name'],
  },
  inline: {
    [`${CORE}.Volume`]: ['volumeSource'],
    [`${CORE}.Probe`]: ['handler'],
    [`${CORE}.ConfigMapKeySelector`]: ['localObjectReference'],
    [`${CORE}.SecretKeySelector`]: ['localObjectReference'],
    [`${CORE}.ConfigMapEnvSource`]: ['localObjectReference'],
    [`${CORE}.SecretEnvSource`]: ['localObjectReference'],
    [`${CORE}.ConfigMapVolumeSource`]: ['localObjectReference'],
  },
};

/** JSON names that differ from the proto field name. */
const JSON_NAMES: Readonly<Record<string, string>> = {
  'k8s.io.api.authentication.v1.BoundObjectReference.uID': 'uid',
  'k8s.io.api.authentication.v1.UserInfo.uID': 'uid',
};

const BY_FIELD: ReadonlyMap<string, GoJsonForm> = new Map(
  (Object.entries(FORMS) as [GoJsonForm, Record<string, readonly string[]>][]).flatMap(([form, byMessage]) =>
    Object.entries(byMessage).flatMap(([message, fields]) => fields.map((f) => [`${message}.${f}`, form] as const)),
  ),
);

/** How field `field` of message `message` (its full name) shows in JSON. */
export function goJsonForm(message: string, field: string): GoJsonForm {
  return BY_FIELD.get(`${message}.${field}`) ?? 'omitempty';
}

/** The JSON name of field `field` of message `message`. */
export function goJsonName(message: string, field: string): string {
  return JSON_NAMES[`${message}.${field}`] ?? field;
}
