/**
 * The istiod chart's objects (istio manifests/charts/istio-control/istio-discovery/templates): the `istiod`
 * ServiceAccount, Deployment, Service, Role and RoleBinding; the `istio` mesh ConfigMap and the
 * `istio-sidecar-injector` ConfigMap; the istiod, gateway-controller and istio-reader ClusterRoles and their
 * bindings; the PodDisruptionBudget and HorizontalPodAutoscaler when the values call for them; the
 * `istio-validator-<namespace>` ValidatingWebhookConfiguration (webhook `rev.validation.istio.io`, `Ignore` until
 * istiod, which keeps webhooks labelled with its revision, sets its caBundle and `Fail`); the NetworkPolicy and the
 * JWKS root ConfigMap when asked for.
 *
 * The container runs amesh's istiod (`amesh istiod`), which differs from Istio's pilot-discovery here:
 * - it reads its settings from env where pilot-discovery reads the mesh ConfigMap or flags: TRUST_DOMAIN and
 *   ROOT_NAMESPACE from the mesh config, CLUSTER_DOMAIN for `--domain`, TOKEN_AUDIENCES when
 *   `global.sds.token.aud` is not `istio-ca`, LOG_FORMAT=json for `--log_as_json`, `--log-level` for
 *   `--log_output_level`;
 * - its readiness is `/ready` on the monitoring port 15014 (pilot-discovery serves it on 8080);
 * - it keeps its token-issuer key and published root in a state directory (an emptyDir, `/var/lib/amesh/istiod`);
 *   its CA comes from where Istio's does (the `cacerts` mount, else the `istio-ca-secret` Secret). It runs as uid
 *   1337 (Istio's pilot image's user) since amesh's image serves every component;
 * - the sidecar injector ConfigMap carries no injection templates and no MutatingWebhookConfiguration is rendered:
 *   amesh injects no sidecars. The `values` ConfigMap and gateway-class ConfigMaps are not rendered either.
 */
import { ameshLogLevel } from '../lib/istio-log-level.js';
import { isRecord } from '../lib/record.js';
import { ISTIOD_GRPC_PORT, ISTIOD_MONITORING_PORT, ISTIOD_WEBHOOK_PORT } from '../lib/istio-ports.js';
import {
  RELEASE,
  envFromMap,
  fieldEnv,
  goString,
  componentImage,
  istioLabels,
  networkPolicy,
  resourcesBlock,
  stringValues,
  toYaml,
  textAt,
  truthy,
  type RenderedObject,
} from './chart-helpers.js';
import { validationWebhook } from './render-base.js';
import { meshConfig } from './mesh-config.js';
import { at, type Tree } from './value-tree.js';

/** Where amesh's istiod keeps its token-issuer key and published root in the pod. */
const STATE_MOUNT = '/var/lib/amesh';
/** The uid of Istio's pilot image. */
const ISTIOD_UID = 1337;

const rule = (apiGroups: string[], resources: string[], verbs: string[], resourceNames?: string[]): Tree => ({
  apiGroups,
  resources,
  ...(resourceNames === undefined ? {} : { resourceNames }),
  verbs,
});

const CONFIG_GROUPS = [
  'config.istio.io',
  'security.istio.io',
  'networking.istio.io',
  'authentication.istio.io',
  'rbac.istio.io',
  'telemetry.istio.io',
  'extensions.istio.io',
];
const ALL = ['get', 'watch', 'list', 'update', 'patch', 'create', 'delete'];
const READ = ['get', 'watch', 'list'];

function istiodRules(values: Tree): Tree[] {
  const env = (at(values, 'env') ?? {}) as Tree;
  const mcs = textAt(values, 'env.MCS_API_GROUP', 'multicluster.x-k8s.io');
  const analysis = at(values, 'global.istiod.enableAnalysis') === true;
  const certProvider = String(at(values, 'global.pilotCertProvider'));
  return [
    rule(
      ['admissionregistration.k8s.io'],
      ['mutatingwebhookconfigurations'],
      ['get', 'list', 'watch', 'update', 'patch'],
    ),
    rule(['admissionregistration.k8s.io'], ['validatingwebhookconfigurations'], ['get', 'list', 'watch', 'update']),
    { apiGroups: CONFIG_GROUPS, verbs: READ, resources: ['*'] },
    ...(analysis
      ? [
          {
            apiGroups: CONFIG_GROUPS,
            verbs: ['update', 'patch'],
            resources: [
              'authorizationpolicies/status',
              'destinationrules/status',
              'envoyfilters/status',
              'gateways/status',
              'peerauthentications/status',
              'proxyconfigs/status',
              'requestauthentications/status',
              'serviceentries/status',
              'sidecars/status',
              'telemetries/status',
              'virtualservices/status',
              'wasmplugins/status',
              'workloadentries/status',
              'workloadgroups/status',
            ],
          },
        ]
      : []),
    { apiGroups: ['networking.istio.io'], verbs: ALL, resources: ['workloadentries'] },
    { apiGroups: ['networking.istio.io'], verbs: ALL, resources: ['workloadentries/status', 'serviceentries/status'] },
    { apiGroups: ['security.istio.io'], verbs: ALL, resources: ['authorizationpolicies/status'] },
    { apiGroups: [''], verbs: ALL, resources: ['services/status'] },
    rule(['apiextensions.k8s.io'], ['customresourcedefinitions'], ['get', 'list', 'watch']),
    rule([''], ['pods', 'nodes', 'services', 'namespaces', 'endpoints'], ['get', 'list', 'watch']),
    rule(['discovery.k8s.io'], ['endpointslices'], ['get', 'list', 'watch']),
    ...(at(values, 'taint.enabled') === true ? [rule([''], ['nodes'], ['patch'])] : []),
    ...(analysis
      ? [
          rule(['extensions', 'networking.k8s.io'], ['ingresses'], ['get', 'list', 'watch']),
          rule(['extensions', 'networking.k8s.io'], ['ingresses/status'], ['*']),
        ]
      : []),
    rule(['networking.k8s.io'], ['ingresses', 'ingressclasses'], ['get', 'list', 'watch']),
    rule(['networking.k8s.io'], ['ingresses/status'], ['*']),
    rule([''], ['configmaps'], ['create', 'get', 'list', 'watch', 'update']),
    ...(truthy(env['EXTERNAL_CA']) || !['istiod', 'custom', 'none'].includes(certProvider)
      ? [
          rule(
            ['certificates.k8s.io'],
            ['certificatesigningrequests', 'certificatesigningrequests/approval', 'certificatesigningrequests/status'],
            ['update', 'create', 'get', 'delete', 'watch'],
          ),
          rule(['certificates.k8s.io'], ['signers'], ['approve'], (at(values, 'global.certSigners') as string[]) ?? []),
        ]
      : []),
    ...(env['ENABLE_CLUSTER_TRUST_BUNDLE_API'] === true
      ? [
          rule(
            ['certificates.k8s.io'],
            ['clustertrustbundles'],
            ['update', 'create', 'delete', 'list', 'watch', 'get'],
          ),
          rule(['certificates.k8s.io'], ['signers'], ['attest'], ['istio.io/istiod-ca']),
        ]
      : []),
    rule(['authentication.k8s.io'], ['tokenreviews'], ['create']),
    rule(['authorization.k8s.io'], ['subjectaccessreviews'], ['create']),
    rule(['gateway.networking.k8s.io', 'gateway.networking.x-k8s.io'], ['*'], ['get', 'watch', 'list']),
    rule(['gateway.networking.x-k8s.io'], ['xbackends/status', 'xbackendtrafficpolicies/status'], ['update', 'patch']),
    rule(
      ['gateway.networking.k8s.io'],
      [
        'backendtlspolicies/status',
        'gatewayclasses/status',
        'gateways/status',
        'grpcroutes/status',
        'httproutes/status',
        'referencegrants/status',
        'tcproutes/status',
        'tlsroutes/status',
        'udproutes/status',
        'listenersets/status',
      ],
      ['update', 'patch'],
    ),
    rule(['gateway.networking.k8s.io'], ['gatewayclasses'], ['create', 'update', 'patch', 'delete']),
    rule(['inference.networking.k8s.io'], ['inferencepools'], ['get', 'watch', 'list']),
    rule(['inference.networking.k8s.io'], ['inferencepools/status'], ['update', 'patch']),
    rule([''], ['secrets'], ['get', 'watch', 'list']),
    rule([mcs], ['serviceexports'], ['get', 'watch', 'list', 'create', 'delete']),
    rule([mcs], ['serviceimports'], ['get', 'watch', 'list']),
  ];
}

const GATEWAY_CONTROLLER_RULES: Tree[] = [
  { apiGroups: ['apps'], verbs: ALL, resources: ['deployments'] },
  { apiGroups: ['autoscaling'], verbs: ALL, resources: ['horizontalpodautoscalers'] },
  { apiGroups: ['policy'], verbs: ALL, resources: ['poddisruptionbudgets'] },
  { apiGroups: [''], verbs: ALL, resources: ['services'] },
  { apiGroups: [''], verbs: ALL, resources: ['serviceaccounts'] },
];

function readerRules(values: Tree): Tree[] {
  const mcs = textAt(values, 'env.MCS_API_GROUP', 'multicluster.x-k8s.io');
  return [
    rule(CONFIG_GROUPS, ['*'], ['get', 'list', 'watch']),
    rule(
      [''],
      ['endpoints', 'pods', 'services', 'nodes', 'replicationcontrollers', 'namespaces', 'secrets', 'configmaps'],
      ['get', 'list', 'watch'],
    ),
    { apiGroups: ['networking.istio.io'], verbs: READ, resources: ['workloadentries'] },
    rule(['networking.x-k8s.io', 'gateway.networking.k8s.io'], ['gateways'], READ),
    rule(['apiextensions.k8s.io'], ['customresourcedefinitions'], ['get', 'list', 'watch']),
    rule(['discovery.k8s.io'], ['endpointslices'], ['get', 'list', 'watch']),
    rule([mcs], ['serviceexports'], ['get', 'list', 'watch', 'create', 'delete']),
    rule([mcs], ['serviceimports'], ['get', 'list', 'watch']),
    rule(['apps'], ['replicasets'], ['get', 'list', 'watch']),
    rule(['authentication.k8s.io'], ['tokenreviews'], ['create']),
    rule(['authorization.k8s.io'], ['subjectaccessreviews'], ['create']),
  ];
}

const ROLE_RULES: Tree[] = [
  rule(['networking.istio.io'], ['gateways'], ['create']),
  rule([''], ['secrets'], ['create', 'get', 'watch', 'list', 'update', 'delete']),
  rule([''], ['configmaps'], ['delete']),
  rule(['coordination.k8s.io'], ['leases'], ['get', 'update', 'patch', 'create']),
];

/** Names and labels shared by the chart's templates. */
interface Names {
  readonly namespace: string;
  readonly istioNamespace: string;
  /** `istiod`, or `istiod-<revision>`. */
  readonly istiod: string;
  readonly revisionSuffix: string;
  readonly revisionLabel: string;
  /** The Deployment's, Service's and PDB's selector. */
  readonly selector: Record<string, string>;
  readonly labels: Record<string, string>;
  /** The labels of the objects istioctl tracks by owner: istio.io/rev, owning-resource, component. */
  readonly owned: Record<string, string>;
}

function names(values: Tree, namespace: string): Names {
  const revision = textAt(values, 'revision');
  const revisionLabel = revision || 'default';
  return {
    namespace,
    istioNamespace: String(at(values, 'global.istioNamespace')),
    istiod: revision === '' ? 'istiod' : `istiod-${revision}`,
    revisionSuffix: revision === '' ? '' : `-${revision}`,
    revisionLabel,
    selector: revision === '' ? { app: 'istiod', istio: 'pilot' } : { app: 'istiod', 'istio.io/rev': revision },
    labels: istioLabels('istiod'),
    owned: {
      'istio.io/rev': revisionLabel,
      'install.operator.istio.io/owning-resource': textAt(values, 'ownerName', 'unknown'),
      'operator.istio.io/component': 'Pilot',
    },
  };
}

function clusterRbac(values: Tree, n: Names): RenderedObject[] {
  const labels = { app: 'istiod', release: RELEASE, 'app.kubernetes.io/name': 'istiod', ...n.labels };
  const readerLabels = { app: 'istio-reader', release: RELEASE, 'app.kubernetes.io/name': 'istio-reader', ...n.labels };
  const subject = { kind: 'ServiceAccount', name: n.istiod, namespace: n.istioNamespace };
  const role = (name: string, l: Record<string, string>, rules: Tree[]): RenderedObject => ({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name, labels: l },
    rules,
  });
  const binding = (name: string, l: Record<string, string>, subjects: Tree[]): RenderedObject => ({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name, labels: l },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
    subjects,
  });
  const suffix = `${n.revisionSuffix}-${n.namespace}`;
  const out = [
    role(`istiod-clusterrole${suffix}`, labels, istiodRules(values)),
    binding(`istiod-clusterrole${suffix}`, labels, [subject]),
  ];
  if (goString(at(values, 'env.PILOT_ENABLE_GATEWAY_API_DEPLOYMENT_CONTROLLER')) !== 'false')
    out.push(
      role(`istiod-gateway-controller${suffix}`, labels, GATEWAY_CONTROLLER_RULES),
      binding(`istiod-gateway-controller${suffix}`, labels, [subject]),
    );
  if (at(values, 'global.enableReaderRBAC') !== false) {
    const readerAccount = at(values, 'global.readerServiceAccount');
    const reader =
      isRecord(readerAccount) && truthy(readerAccount['name'])
        ? { kind: 'ServiceAccount', name: readerAccount['name'], namespace: readerAccount['namespace'] ?? '' }
        : { kind: 'ServiceAccount', name: 'istio-reader-service-account', namespace: n.istioNamespace };
    out.push(
      role(`istio-reader-clusterrole${suffix}`, readerLabels, readerRules(values)),
      binding(`istio-reader-clusterrole${suffix}`, readerLabels, [reader]),
    );
  }
  return out;
}

/** The container's env: the chart's, then what amesh's istiod reads from env instead of the mesh config or flags. */
function istiodEnv(values: Tree, n: Names, mesh: Tree): Tree[] {
  const env = (at(values, 'env') ?? {}) as Tree;
  const trustedNs = textAt(values, 'trustedZtunnelNamespace', n.namespace);
  const trustedName = textAt(values, 'trustedZtunnelName', 'ztunnel');
  const traceSampling = at(values, 'traceSampling');
  const trustBundle = at(values, 'global.trustBundleName');
  const crl = at(values, 'crlConfigMapName');
  const chart: Tree[] = [
    { name: 'REVISION', value: n.revisionLabel },
    { name: 'PILOT_CERT_PROVIDER', value: goString(at(values, 'global.pilotCertProvider')) },
    fieldEnv('POD_NAME', 'metadata.name', 'v1'),
    fieldEnv('POD_NAMESPACE', 'metadata.namespace', 'v1'),
    fieldEnv('SERVICE_ACCOUNT', 'spec.serviceAccountName', 'v1'),
    { name: 'KUBECONFIG', value: '/var/run/secrets/remote/config' },
    ...(truthy(env['CA_TRUSTED_NODE_ACCOUNTS'])
      ? []
      : [{ name: 'CA_TRUSTED_NODE_ACCOUNTS', value: `${trustedNs}/${trustedName}` }]),
    ...envFromMap(env),
    ...(env['COMPLIANCE_POLICY'] === 'fips-140-3' ? [{ name: 'GODEBUG', value: 'fips140=only' }] : []),
    ...((at(values, 'envVarFrom') as Tree[] | undefined) ?? []),
    ...(truthy(traceSampling) ? [{ name: 'PILOT_TRACE_SAMPLING', value: goString(traceSampling) }] : []),
    ...(at(values, 'taint.enabled') === true
      ? [
          { name: 'PILOT_ENABLE_NODE_UNTAINT_CONTROLLERS', value: 'true' },
          { name: 'PILOT_NODE_UNTAINT_CONTROLLERS_TAINT_NAME', value: goString(at(values, 'taint.name')) },
        ]
      : []),
    ...(truthy(at(values, 'global.externalIstiod')) && !truthy(env['EXTERNAL_ISTIOD'])
      ? [{ name: 'EXTERNAL_ISTIOD', value: goString(at(values, 'global.externalIstiod')) }]
      : []),
    ...(truthy(trustBundle) ? [{ name: 'PILOT_CA_CERT_CONFIGMAP', value: goString(trustBundle) }] : []),
    ...(truthy(crl) ? [{ name: 'PILOT_CRL_CONFIGMAP', value: goString(crl) }] : []),
    { name: 'PILOT_ENABLE_ANALYSIS', value: goString(at(values, 'global.istiod.enableAnalysis')) },
    { name: 'CLUSTER_ID', value: textAt(values, 'global.multiCluster.clusterName', 'Kubernetes') },
    { name: 'PLATFORM', value: goString(at(values, 'global.platform') || at(values, 'platform') || '') },
  ];
  const audience = goString(at(values, 'global.sds.token.aud'));
  const amesh: Tree[] = [
    { name: 'TRUST_DOMAIN', value: goString(mesh['trustDomain']) },
    { name: 'ROOT_NAMESPACE', value: goString(mesh['rootNamespace']) },
    { name: 'CLUSTER_DOMAIN', value: goString(at(values, 'global.proxy.clusterDomain')) },
    ...(audience === 'istio-ca' ? [] : [{ name: 'TOKEN_AUDIENCES', value: audience }]),
    ...(at(values, 'global.logAsJson') === true ? [{ name: 'LOG_FORMAT', value: 'json' }] : []),
  ];
  const named = new Set(chart.map((e) => e['name']));
  return [...chart, ...amesh.filter((e) => !named.has(e['name']))];
}

function deployment(values: Tree, n: Names, mesh: Tree): RenderedObject {
  const logLevel = at(values, 'global.logging.level');
  const priorityClass = at(values, 'global.priorityClassName');
  const pullPolicy = at(values, 'global.imagePullPolicy');
  const seccomp = at(values, 'seccompProfile');
  const jwks = truthy(at(values, 'jwksResolverExtraRootCA'));
  const trustBundle = textAt(values, 'global.trustBundleName', '');
  const clusterTrustBundle = at(values, 'env.ENABLE_CLUSTER_TRUST_BUNDLE_API') === true;
  const resources = at(values, 'resources');
  const optional = (v: unknown, field: string): Tree => (truthy(v) ? { [field]: v } : {});
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {
      name: n.istiod,
      namespace: n.namespace,
      labels: {
        app: 'istiod',
        ...n.owned,
        istio: 'pilot',
        release: RELEASE,
        'app.kubernetes.io/name': 'istiod',
        ...n.labels,
        ...stringValues(at(values, 'deploymentLabels')),
      },
      ...optional(at(values, 'deploymentAnnotations'), 'annotations'),
    },
    spec: {
      ...(at(values, 'autoscaleEnabled') !== true && truthy(at(values, 'replicaCount'))
        ? { replicas: at(values, 'replicaCount') }
        : {}),
      strategy: {
        rollingUpdate: {
          maxSurge: at(values, 'rollingMaxSurge'),
          maxUnavailable: at(values, 'rollingMaxUnavailable'),
        },
      },
      selector: { matchLabels: n.selector },
      template: {
        metadata: {
          labels: {
            app: 'istiod',
            'istio.io/rev': n.revisionLabel,
            'install.operator.istio.io/owning-resource': n.owned['install.operator.istio.io/owning-resource'],
            'sidecar.istio.io/inject': 'false',
            'operator.istio.io/component': 'Pilot',
            istio: n.revisionSuffix === '' ? 'pilot' : 'istiod',
            ...stringValues(at(values, 'podLabels')),
            'istio.io/dataplane-mode': 'none',
            'app.kubernetes.io/name': 'istiod',
            ...n.labels,
          },
          annotations: {
            'prometheus.io/port': String(ISTIOD_MONITORING_PORT),
            'prometheus.io/scrape': 'true',
            'sidecar.istio.io/inject': 'false',
            ...((at(values, 'podAnnotations') as Tree | undefined) ?? {}),
          },
        },
        spec: {
          ...optional(at(values, 'nodeSelector'), 'nodeSelector'),
          ...optional(at(values, 'affinity'), 'affinity'),
          tolerations: [
            { key: 'cni.istio.io/not-ready', operator: 'Exists' },
            ...((at(values, 'tolerations') as Tree[] | undefined) ?? []),
          ],
          ...optional(at(values, 'topologySpreadConstraints'), 'topologySpreadConstraints'),
          serviceAccountName: n.istiod,
          ...optional(priorityClass, 'priorityClassName'),
          ...optional(at(values, 'initContainers'), 'initContainers'),
          containers: [
            {
              name: 'discovery',
              image: componentImage(values),
              ...optional(pullPolicy, 'imagePullPolicy'),
              ...optional(at(values, 'terminationMessagePolicy'), 'terminationMessagePolicy'),
              command: ['amesh'],
              args: [
                'istiod',
                '--state-dir',
                `${STATE_MOUNT}/istiod`,
                ...(truthy(logLevel) ? ['--log-level', ameshLogLevel(String(logLevel))] : []),
                ...((at(values, 'extraContainerArgs') as unknown[] | undefined) ?? []),
              ],
              ports: [
                { containerPort: 8080, protocol: 'TCP', name: 'http-debug' },
                { containerPort: 15010, protocol: 'TCP', name: 'grpc-xds' },
                { containerPort: ISTIOD_GRPC_PORT, protocol: 'TCP', name: 'tls-xds' },
                { containerPort: ISTIOD_WEBHOOK_PORT, protocol: 'TCP', name: 'https-webhooks' },
                { containerPort: ISTIOD_MONITORING_PORT, protocol: 'TCP', name: 'http-monitoring' },
              ],
              readinessProbe: {
                httpGet: { path: '/ready', port: ISTIOD_MONITORING_PORT },
                initialDelaySeconds: 1,
                periodSeconds: 3,
                timeoutSeconds: 5,
              },
              env: istiodEnv(values, n, mesh),
              resources: resourcesBlock(truthy(resources) ? resources : at(values, 'global.defaultResources')),
              securityContext: {
                allowPrivilegeEscalation: false,
                readOnlyRootFilesystem: true,
                runAsNonRoot: true,
                runAsUser: ISTIOD_UID,
                runAsGroup: ISTIOD_UID,
                capabilities: { drop: ['ALL'] },
                ...optional(seccomp, 'seccompProfile'),
              },
              volumeMounts: [
                { name: 'istio-token', mountPath: '/var/run/secrets/tokens', readOnly: true },
                { name: 'local-certs', mountPath: '/var/run/secrets/istio-dns' },
                { name: 'cacerts', mountPath: '/etc/cacerts', readOnly: true },
                { name: 'istio-kubeconfig', mountPath: '/var/run/secrets/remote', readOnly: true },
                ...(jwks ? [{ name: 'extracacerts', mountPath: '/cacerts' }] : []),
                { name: 'istio-csr-dns-cert', mountPath: '/var/run/secrets/istiod/tls', readOnly: true },
                { name: 'istio-csr-ca-configmap', mountPath: '/var/run/secrets/istiod/ca', readOnly: true },
                { name: 'amesh-state', mountPath: STATE_MOUNT },
                ...((at(values, 'volumeMounts') as Tree[] | undefined) ?? []),
              ],
            },
          ],
          volumes: [
            { emptyDir: { medium: 'Memory' }, name: 'local-certs' },
            {
              name: 'istio-token',
              projected: {
                sources: [
                  {
                    serviceAccountToken: {
                      audience: at(values, 'global.sds.token.aud'),
                      expirationSeconds: 43200,
                      path: 'istio-token',
                    },
                  },
                ],
              },
            },
            { name: 'cacerts', secret: { secretName: 'cacerts', optional: true } },
            { name: 'istio-kubeconfig', secret: { secretName: 'istio-kubeconfig', optional: true } },
            { name: 'istio-csr-dns-cert', secret: { secretName: 'istiod-tls', optional: true } },
            clusterTrustBundle
              ? {
                  name: 'istio-csr-ca-configmap',
                  projected: {
                    sources: [
                      {
                        clusterTrustBundle: {
                          name: `istio.io:istiod-ca:${trustBundle || 'root-cert'}`,
                          path: 'root-cert.pem',
                          optional: true,
                        },
                      },
                    ],
                  },
                }
              : {
                  name: 'istio-csr-ca-configmap',
                  configMap: { name: trustBundle || 'istio-ca-root-cert', defaultMode: 420, optional: true },
                },
            ...(jwks
              ? [{ name: 'extracacerts', configMap: { name: `pilot-jwks-extra-cacerts${n.revisionSuffix}` } }]
              : []),
            { name: 'amesh-state', emptyDir: {} },
            ...((at(values, 'volumes') as Tree[] | undefined) ?? []),
          ],
        },
      },
    },
  };
}

function injectorConfig(values: Tree): string {
  const defaults = at(values, 'sidecarInjectorWebhook.defaultTemplates') as string[];
  const annotations = (at(values, 'sidecarInjectorWebhook.injectedAnnotations') ?? {}) as Tree;
  return toYaml({
    defaultTemplates: truthy(defaults) ? defaults : ['sidecar'],
    policy: at(values, 'global.proxy.autoInject'),
    alwaysInjectSelector: at(values, 'sidecarInjectorWebhook.alwaysInjectSelector') ?? [],
    neverInjectSelector: at(values, 'sidecarInjectorWebhook.neverInjectSelector') ?? [],
    injectedAnnotations: annotations,
    template: '{{ Template_Version_And_Istio_Version_Mismatched_Check_Installation }}',
    templates: at(values, 'sidecarInjectorWebhook.templates') ?? {},
  });
}

/** `values` of the injector ConfigMap: the fields its templates read (global, sidecarInjectorWebhook, revision...). */
function injectorValues(values: Tree): string {
  const pick = (tree: unknown, keys: string[]): Tree =>
    Object.fromEntries(keys.filter((k) => isRecord(tree) && k in tree).map((k) => [k, (tree as Tree)[k]]));
  return JSON.stringify(
    {
      ...pick(values, ['global', 'sidecarInjectorWebhook', 'revision']),
      pilot: pick(values, ['cni', 'env']),
      gateways: pick(at(values, 'gateways'), ['securityContext', 'seccompProfile']),
    },
    null,
    2,
  );
}

export function renderIstiod(values: Tree, namespace: string): RenderedObject[] {
  const scope = at(values, 'global.resourceScope');
  const cluster = scope === 'all' || scope === 'cluster';
  const namespaced = scope === 'all' || scope === 'namespace';
  const n = names(values, namespace);
  const mesh = meshConfig(values, namespace);
  const istiodLabels = { app: 'istiod', release: RELEASE, 'app.kubernetes.io/name': 'istiod', ...n.labels };
  const ownedLabels = (extra: Record<string, string> = {}): Record<string, string> => ({
    ...n.owned,
    ...extra,
    release: RELEASE,
    'app.kubernetes.io/name': 'istiod',
    ...n.labels,
  });
  const out: RenderedObject[] = [];
  if (cluster) {
    out.push(...clusterRbac(values, n));
    if (at(values, 'global.configValidation') === true) {
      const webhook = validationWebhook(values, 'rev.validation.istio.io', n.istiod);
      out.push({
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'ValidatingWebhookConfiguration',
        metadata: {
          name: `istio-validator${n.revisionSuffix}-${n.istioNamespace}`,
          labels: { ...istiodLabels, istio: 'istiod', 'istio.io/rev': n.revisionLabel },
        },
        webhooks: [
          {
            ...webhook,
            objectSelector: {
              matchExpressions: [{ key: 'istio.io/rev', operator: 'In', values: [n.revisionLabel] }],
            },
          },
        ],
      });
    }
  }
  if (!namespaced) return out;
  const pullSecrets = at(values, 'global.imagePullSecrets') as string[];
  const accountAnnotations = at(values, 'serviceAccountAnnotations');
  out.push({
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    ...(truthy(pullSecrets) ? { imagePullSecrets: pullSecrets.map((name) => ({ name })) } : {}),
    metadata: {
      name: n.istiod,
      namespace: n.istioNamespace,
      labels: istiodLabels,
      ...(truthy(accountAnnotations) ? { annotations: accountAnnotations as Record<string, string> } : {}),
    },
  });
  out.push(
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: n.istiod, namespace: n.istioNamespace, labels: istiodLabels },
      rules: ROLE_RULES,
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: n.istiod, namespace: n.istioNamespace, labels: istiodLabels },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: n.istiod },
      subjects: [{ kind: 'ServiceAccount', name: n.istiod, namespace: n.istioNamespace }],
    },
  );
  if (at(values, 'configMap') === true) {
    const networks = at(values, 'global.meshNetworks');
    out.push({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: `istio${n.revisionSuffix}`, namespace, labels: ownedLabels() },
      data: { meshNetworks: toYaml({ networks: truthy(networks) ? networks : {} }), mesh: toYaml(mesh) },
    });
  }
  if (at(values, 'global.omitSidecarInjectorConfigMap') !== true)
    out.push({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: `istio-sidecar-injector${n.revisionSuffix}`, namespace, labels: ownedLabels() },
      data: { values: injectorValues(values), config: injectorConfig(values) },
    });
  if (truthy(at(values, 'jwksResolverExtraRootCA')))
    out.push({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: `pilot-jwks-extra-cacerts${n.revisionSuffix}`, namespace, labels: ownedLabels() },
      data: { 'extra.pem': goString(at(values, 'jwksResolverExtraRootCA')) },
    });
  out.push(deployment(values, n, mesh));
  const serviceAnnotations = at(values, 'serviceAnnotations');
  const ipFamilyPolicy = at(values, 'ipFamilyPolicy');
  const ipFamilies = at(values, 'ipFamilies');
  const trafficDistribution = at(values, 'trafficDistribution');
  out.push({
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name: n.istiod,
      namespace,
      ...(truthy(serviceAnnotations) ? { annotations: serviceAnnotations as Record<string, string> } : {}),
      labels: {
        ...n.owned,
        app: 'istiod',
        istio: 'pilot',
        release: RELEASE,
        'app.kubernetes.io/name': 'istiod',
        ...n.labels,
      },
    },
    spec: {
      ports: [
        { port: 15010, name: 'grpc-xds', protocol: 'TCP' },
        { port: ISTIOD_GRPC_PORT, name: 'https-dns', protocol: 'TCP' },
        { port: 443, name: 'https-webhook', targetPort: ISTIOD_WEBHOOK_PORT, protocol: 'TCP' },
        { port: ISTIOD_MONITORING_PORT, name: 'http-monitoring', protocol: 'TCP' },
      ],
      selector: n.selector,
      ...(truthy(ipFamilyPolicy) ? { ipFamilyPolicy } : {}),
      ...(truthy(ipFamilies) ? { ipFamilies } : {}),
      ...(truthy(trafficDistribution) ? { trafficDistribution } : {}),
    },
  });
  const autoscale = at(values, 'autoscaleEnabled') === true;
  const min = Number(at(values, 'autoscaleMin') ?? 0);
  const max = Number(at(values, 'autoscaleMax') ?? 0);
  const replicas = Number(at(values, 'replicaCount') ?? 0);
  if (
    at(values, 'global.defaultPodDisruptionBudget.enabled') === true &&
    ((autoscale && min > 1) || (!autoscale && replicas > 1))
  ) {
    const pdb = (at(values, 'pdb') ?? {}) as Tree;
    let budget: Tree = {};
    if (truthy(pdb['minAvailable']) && !('maxUnavailable' in pdb)) budget = { minAvailable: pdb['minAvailable'] };
    else if (truthy(pdb['maxUnavailable'])) budget = { maxUnavailable: pdb['maxUnavailable'] };
    out.push({
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
      metadata: { name: n.istiod, namespace, labels: { app: 'istiod', ...ownedLabels({ istio: 'pilot' }) } },
      spec: {
        ...budget,
        ...(truthy(pdb['unhealthyPodEvictionPolicy'])
          ? { unhealthyPodEvictionPolicy: pdb['unhealthyPodEvictionPolicy'] }
          : {}),
        selector: { matchLabels: n.selector },
      },
    });
  }
  if (autoscale && min > 0 && max > 0) {
    const memory = at(values, 'memory.targetAverageUtilization');
    const behavior = at(values, 'autoscaleBehavior');
    const metric = (name: string, utilization: unknown): Tree => ({
      type: 'Resource',
      resource: { name, target: { type: 'Utilization', averageUtilization: utilization } },
    });
    out.push({
      apiVersion: 'autoscaling/v2',
      kind: 'HorizontalPodAutoscaler',
      metadata: { name: n.istiod, namespace, labels: { app: 'istiod', ...ownedLabels() } },
      spec: {
        maxReplicas: max,
        minReplicas: min,
        scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: n.istiod },
        metrics: [
          metric('cpu', at(values, 'cpu.targetAverageUtilization')),
          ...(truthy(memory) ? [metric('memory', memory)] : []),
        ],
        ...(truthy(behavior) ? { behavior } : {}),
      },
    });
  }
  if (at(values, 'global.networkPolicy.enabled') === true)
    out.push(
      networkPolicy(
        { name: n.istiod, namespace, labels: { app: 'istiod', ...ownedLabels({ istio: 'pilot' }) } },
        { app: 'istiod', 'istio.io/rev': n.revisionLabel },
        [
          [[ISTIOD_WEBHOOK_PORT, 'TCP']],
          [
            [15010, 'TCP'],
            [15011, 'TCP'],
            [ISTIOD_GRPC_PORT, 'TCP'],
            [8080, 'TCP'],
            [ISTIOD_MONITORING_PORT, 'TCP'],
          ],
        ],
      ),
    );
  return out;
}
