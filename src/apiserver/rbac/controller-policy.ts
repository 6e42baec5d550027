/**
 * The ClusterRoles of kube-controller-manager's controllers, each bound to the controller's ServiceAccount in
 * kube-system, as kube-apiserver reconciles them (kubernetes plugin/pkg/auth/authorizer/rbac/bootstrappolicy/
 * controller_policy.go `ControllerRoles`, `ControllerRoleBindings`, rendered with the default feature gates as its
 * testdata/controller-roles.yaml shows them). amesh's controllers run with the admin's credentials, so these
 * grant nothing in use; they are here because every cluster has them.
 */
import type { KubeObject } from '../kube-object.js';
import {
  EVENTS_RULE,
  READ,
  type RuleJson,
  clusterRole,
  clusterRoleBinding,
  rule,
  serviceAccount,
} from './policy-builders.js';

const APPS_EXTENSIONS = ['apps', 'extensions'];
const RESOURCE = 'resource.k8s.io';
const STORAGE = 'storage.k8s.io';
const ALL_VERBS_BUT_DELETECOLLECTION = ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'];

/** Each controller's name (its ServiceAccount's) and rules; the role is `system:controller:<name>`. */
const CONTROLLERS: readonly (readonly [string, readonly RuleJson[]])[] = [
  [
    'attachdetach-controller',
    [
      rule(['list', 'watch'], [''], ['persistentvolumes', 'persistentvolumeclaims']),
      rule(READ, [''], ['nodes']),
      rule(['patch', 'update'], [''], ['nodes/status']),
      rule(['list', 'watch'], [''], ['pods']),
      EVENTS_RULE,
      rule(['get', 'create', 'delete', 'list', 'watch'], [STORAGE], ['volumeattachments']),
      rule(READ, [STORAGE], ['csidrivers']),
      rule(READ, [STORAGE], ['csinodes']),
    ],
  ],
  [
    'certificate-controller',
    [
      rule(['get', 'list', 'watch', 'delete'], ['certificates.k8s.io'], ['certificatesigningrequests']),
      rule(
        ['update'],
        ['certificates.k8s.io'],
        ['certificatesigningrequests/status', 'certificatesigningrequests/approval'],
      ),
      rule(['approve'], ['certificates.k8s.io'], ['signers'], ['kubernetes.io/kube-apiserver-client-kubelet']),
      rule(
        ['sign'],
        ['certificates.k8s.io'],
        ['signers'],
        [
          'kubernetes.io/kube-apiserver-client',
          'kubernetes.io/kube-apiserver-client-kubelet',
          'kubernetes.io/kubelet-serving',
          'kubernetes.io/legacy-unknown',
        ],
      ),
      rule(['create'], ['authorization.k8s.io'], ['subjectaccessreviews']),
      EVENTS_RULE,
    ],
  ],
  [
    'clusterrole-aggregation-controller',
    [rule(['escalate', 'get', 'list', 'watch', 'update', 'patch'], ['rbac.authorization.k8s.io'], ['clusterroles'])],
  ],
  [
    'cronjob-controller',
    [
      rule(['get', 'list', 'watch', 'update'], ['batch'], ['cronjobs']),
      rule(ALL_VERBS_BUT_DELETECOLLECTION, ['batch'], ['jobs']),
      rule(['update'], ['batch'], ['cronjobs/status']),
      rule(['update'], ['batch'], ['cronjobs/finalizers']),
      rule(['list', 'watch', 'delete'], [''], ['pods']),
      EVENTS_RULE,
    ],
  ],
  [
    'daemon-set-controller',
    [
      rule(READ, APPS_EXTENSIONS, ['daemonsets']),
      rule(['update'], APPS_EXTENSIONS, ['daemonsets/status']),
      rule(['update'], APPS_EXTENSIONS, ['daemonsets/finalizers']),
      rule(['list', 'watch'], [''], ['nodes']),
      rule(['list', 'watch', 'create', 'delete', 'patch'], [''], ['pods']),
      rule(['create'], [''], ['pods/binding']),
      rule(ALL_VERBS_BUT_DELETECOLLECTION, ['apps'], ['controllerrevisions']),
      EVENTS_RULE,
    ],
  ],
  [
    'deployment-controller',
    [
      rule(['get', 'list', 'watch', 'update'], APPS_EXTENSIONS, ['deployments']),
      rule(['update'], APPS_EXTENSIONS, ['deployments/status']),
      rule(['update'], APPS_EXTENSIONS, ['deployments/finalizers']),
      rule(ALL_VERBS_BUT_DELETECOLLECTION, APPS_EXTENSIONS, ['replicasets']),
      rule(['get', 'list', 'watch', 'update'], [''], ['pods']),
      EVENTS_RULE,
    ],
  ],
  [
    'device-taint-eviction-controller',
    [
      rule(['get', 'list', 'watch', 'delete'], [''], ['pods']),
      rule(['update', 'patch'], [''], ['pods/status']),
      rule(READ, [RESOURCE], ['resourceclaims']),
      rule(READ, [RESOURCE], ['resourceslices']),
      rule(READ, [RESOURCE], ['deviceclasses']),
      EVENTS_RULE,
    ],
  ],
  [
    'disruption-controller',
    [
      rule(READ, APPS_EXTENSIONS, ['deployments']),
      rule(READ, APPS_EXTENSIONS, ['replicasets']),
      rule(READ, [''], ['replicationcontrollers']),
      rule(READ, ['policy'], ['poddisruptionbudgets']),
      rule(READ, ['apps'], ['statefulsets']),
      rule(['update'], ['policy'], ['poddisruptionbudgets/status']),
      rule(['patch', 'update'], [''], ['pods/status']),
      rule(['get'], ['*'], ['*/scale']),
      EVENTS_RULE,
    ],
  ],
  [
    'endpoint-controller',
    [
      rule(READ, [''], ['services', 'pods']),
      rule(['get', 'list', 'create', 'update', 'delete', 'watch'], [''], ['endpoints']),
      rule(['create'], [''], ['endpoints/restricted']),
      EVENTS_RULE,
    ],
  ],
  [
    'endpointslice-controller',
    [
      rule(READ, [''], ['services', 'pods', 'nodes']),
      rule(['update'], [''], ['services/finalizers']),
      rule(['get', 'list', 'create', 'update', 'delete', 'watch'], ['discovery.k8s.io'], ['endpointslices']),
      EVENTS_RULE,
    ],
  ],
  [
    'endpointslicemirroring-controller',
    [
      rule(READ, [''], ['services', 'endpoints']),
      rule(['update'], [''], ['services/finalizers']),
      rule(['update'], [''], ['endpoints/finalizers']),
      rule(['get', 'list', 'create', 'update', 'delete', 'watch'], ['discovery.k8s.io'], ['endpointslices']),
      EVENTS_RULE,
    ],
  ],
  [
    'ephemeral-volume-controller',
    [
      rule(READ, [''], ['pods']),
      rule(['update'], [''], ['pods/finalizers']),
      rule(['get', 'list', 'watch', 'create'], [''], ['persistentvolumeclaims']),
      EVENTS_RULE,
    ],
  ],
  [
    'expand-controller',
    [
      rule(['get', 'list', 'watch', 'update', 'patch'], [''], ['persistentvolumes']),
      rule(['update', 'patch'], [''], ['persistentvolumeclaims/status']),
      rule(READ, [''], ['persistentvolumeclaims']),
      EVENTS_RULE,
    ],
  ],
  [
    'generic-garbage-collector',
    [rule(['get', 'list', 'watch', 'patch', 'update', 'delete'], ['*'], ['*']), EVENTS_RULE],
  ],
  [
    'horizontal-pod-autoscaler',
    [
      rule(READ, ['autoscaling'], ['horizontalpodautoscalers']),
      rule(['update'], ['autoscaling'], ['horizontalpodautoscalers/status']),
      rule(['get', 'update'], ['*'], ['*/scale']),
      rule(['list', 'watch'], [''], ['pods']),
      rule(['list', 'watch'], ['metrics.k8s.io'], ['pods']),
      rule(READ, ['custom.metrics.k8s.io'], ['*']),
      rule(READ, ['external.metrics.k8s.io'], ['*']),
      EVENTS_RULE,
    ],
  ],
  [
    'job-controller',
    [
      rule(['get', 'list', 'watch', 'update', 'patch'], ['batch'], ['jobs']),
      rule(['update'], ['batch'], ['jobs/status']),
      rule(['update'], ['batch'], ['jobs/finalizers']),
      rule(['list', 'watch', 'create', 'delete', 'patch'], [''], ['pods']),
      EVENTS_RULE,
    ],
  ],
  [
    'legacy-service-account-token-cleaner',
    [
      rule(['get'], [''], ['configmaps'], ['kube-apiserver-legacy-service-account-token-tracking']),
      rule(['delete', 'patch'], [''], ['secrets']),
    ],
  ],
  [
    'namespace-controller',
    [
      rule(['get', 'list', 'watch', 'delete'], [''], ['namespaces']),
      rule(['update'], [''], ['namespaces/finalize', 'namespaces/status']),
      rule(['get', 'list', 'watch', 'delete', 'deletecollection'], ['*'], ['*']),
    ],
  ],
  [
    'node-controller',
    [
      rule(['get', 'list', 'watch', 'update', 'delete', 'patch'], [''], ['nodes']),
      rule(['patch', 'update'], [''], ['nodes/status']),
      rule(['patch', 'update'], [''], ['pods/status']),
      rule(['list', 'get', 'delete', 'watch'], [''], ['pods']),
      EVENTS_RULE,
    ],
  ],
  [
    'persistent-volume-binder',
    [
      rule(['get', 'list', 'watch', 'update', 'create', 'delete'], [''], ['persistentvolumes']),
      rule(['update'], [''], ['persistentvolumes/status']),
      rule(['get', 'list', 'watch', 'update'], [''], ['persistentvolumeclaims']),
      rule(['update'], [''], ['persistentvolumeclaims/status']),
      rule(['list', 'watch', 'get', 'create', 'delete'], [''], ['pods']),
      rule(READ, [STORAGE], ['storageclasses']),
      rule(['list', 'watch'], [''], ['nodes']),
      EVENTS_RULE,
      rule(['watch'], [''], ['events']),
    ],
  ],
  [
    'pod-garbage-collector',
    [
      rule(['list', 'watch', 'delete'], [''], ['pods']),
      rule(READ, [''], ['nodes']),
      rule(['patch'], [''], ['pods/status']),
    ],
  ],
  ['pv-protection-controller', [rule(['get', 'list', 'watch', 'update'], [''], ['persistentvolumes']), EVENTS_RULE]],
  [
    'pvc-protection-controller',
    [
      rule(['get', 'list', 'watch', 'update'], [''], ['persistentvolumeclaims']),
      rule(['update'], [''], ['persistentvolumeclaims/status']),
      rule(READ, [''], ['pods']),
      EVENTS_RULE,
    ],
  ],
  [
    'replicaset-controller',
    [
      rule(['get', 'list', 'watch', 'update'], APPS_EXTENSIONS, ['replicasets']),
      rule(['update'], APPS_EXTENSIONS, ['replicasets/status']),
      rule(['update'], APPS_EXTENSIONS, ['replicasets/finalizers']),
      rule(['list', 'watch', 'patch', 'create', 'delete'], [''], ['pods']),
      EVENTS_RULE,
    ],
  ],
  [
    'replication-controller',
    [
      rule(['get', 'list', 'watch', 'update'], [''], ['replicationcontrollers']),
      rule(['update'], [''], ['replicationcontrollers/status']),
      rule(['update'], [''], ['replicationcontrollers/finalizers']),
      rule(['list', 'watch', 'patch', 'create', 'delete'], [''], ['pods']),
      EVENTS_RULE,
    ],
  ],
  [
    'resource-claim-controller',
    [
      rule(READ, [''], ['pods']),
      rule(['update'], [''], ['pods/finalizers']),
      rule(['get', 'list', 'watch', 'create', 'delete'], [RESOURCE], ['resourceclaims']),
      rule(['update', 'patch'], [RESOURCE], ['resourceclaims', 'resourceclaims/status']),
      rule(['update', 'patch'], [''], ['pods/status']),
      EVENTS_RULE,
      rule(['update', 'patch'], [RESOURCE], ['resourceclaims/binding']),
    ],
  ],
  [
    'resourcequota-controller',
    [rule(['list', 'watch'], ['*'], ['*']), rule(['update'], [''], ['resourcequotas/status']), EVENTS_RULE],
  ],
  ['root-ca-cert-publisher', [rule(['create', 'update'], [''], ['configmaps']), EVENTS_RULE]],
  [
    'route-controller',
    [rule(['list', 'watch'], [''], ['nodes']), rule(['patch'], [''], ['nodes/status']), EVENTS_RULE],
  ],
  [
    'selinux-warning-controller',
    [
      EVENTS_RULE,
      rule(READ, [''], ['persistentvolumes']),
      rule(READ, [''], ['persistentvolumeclaims']),
      rule(READ, [''], ['pods']),
      rule(READ, [STORAGE], ['csidrivers']),
    ],
  ],
  ['service-account-controller', [rule(['create'], [''], ['serviceaccounts']), EVENTS_RULE]],
  [
    'service-cidrs-controller',
    [
      rule(['get', 'list', 'watch', 'patch', 'update'], ['networking.k8s.io'], ['servicecidrs']),
      rule(['patch', 'update'], ['networking.k8s.io'], ['servicecidrs/finalizers']),
      rule(['patch', 'update'], ['networking.k8s.io'], ['servicecidrs/status']),
      rule(READ, ['networking.k8s.io'], ['ipaddresses']),
      EVENTS_RULE,
    ],
  ],
  [
    'service-controller',
    [
      rule(READ, [''], ['services']),
      rule(['patch', 'update'], [''], ['services/status']),
      rule(['list', 'watch'], [''], ['nodes']),
      EVENTS_RULE,
    ],
  ],
  [
    'statefulset-controller',
    [
      rule(['list', 'watch'], [''], ['pods']),
      rule(READ, ['apps'], ['statefulsets']),
      rule(['update'], ['apps'], ['statefulsets/status']),
      rule(['update'], ['apps'], ['statefulsets/finalizers']),
      rule(['get', 'create', 'delete', 'update', 'patch'], [''], ['pods']),
      rule(ALL_VERBS_BUT_DELETECOLLECTION, ['apps'], ['controllerrevisions']),
      rule(['get', 'create', 'list', 'watch'], [''], ['persistentvolumeclaims']),
      rule(['update', 'delete'], [''], ['persistentvolumeclaims']),
      rule(['update'], [''], ['pods/finalizers']),
      EVENTS_RULE,
    ],
  ],
  ['ttl-after-finished-controller', [rule(['get', 'list', 'watch', 'delete'], ['batch'], ['jobs']), EVENTS_RULE]],
  ['ttl-controller', [rule(['update', 'patch', 'list', 'watch'], [''], ['nodes']), EVENTS_RULE]],
  [
    'validatingadmissionpolicy-status-controller',
    [
      rule(READ, ['admissionregistration.k8s.io'], ['validatingadmissionpolicies']),
      rule(['get', 'patch', 'update'], ['admissionregistration.k8s.io'], ['validatingadmissionpolicies/status']),
      EVENTS_RULE,
    ],
  ],
  [
    'volumeattributesclass-protection-controller',
    [
      rule(READ, [''], ['persistentvolumeclaims']),
      rule(READ, [''], ['persistentvolumes']),
      rule(['get', 'list', 'watch', 'update'], [STORAGE], ['volumeattributesclasses']),
      EVENTS_RULE,
    ],
  ],
];

const ROLE_PREFIX = 'system:controller:';

export const CONTROLLER_CLUSTER_ROLES: readonly KubeObject[] = CONTROLLERS.map(([name, rules]) =>
  clusterRole(`${ROLE_PREFIX}${name}`, rules),
);

export const CONTROLLER_CLUSTER_ROLE_BINDINGS: readonly KubeObject[] = CONTROLLERS.map(([name]) =>
  clusterRoleBinding(`${ROLE_PREFIX}${name}`, [serviceAccount('kube-system', name)]),
);
