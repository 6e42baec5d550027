/**
 * The fields an IstioOperator may carry, checked as istioctl checks them: it decodes the spec into its Go type with
 * unknown fields refused (istio operator/pkg/apis/types.go, `could not unmarshal: json: unknown field "x"`) and
 * `spec.values` into the Values protobuf (operator/pkg/apis/values_types.proto, `unknown field "x" in
 * istio.operator.v1alpha1.ProxyConfig`), and meshConfig into istio.mesh.v1alpha1.MeshConfig (istio/api
 * mesh/v1alpha1/config.proto). The tables are ours, written from those messages and from the charts' values.yaml
 * (manifests/charts/{base,istio-control/istio-discovery,istio-cni,ztunnel}/values.yaml): every field Istio accepts
 * is accepted, whether or not amesh renders something from it. `values.ztunnel` is free-form in istioctl's proto; here
 * it is checked against the ztunnel chart's values, which catches typos istioctl lets through.
 */

/** A leaf's JSON type: protobuf scalars and wrappers, Struct (`struct`: any map), Value (`value`: anything). */
export type Leaf =
  | 'string'
  | 'bool'
  | 'uint'
  | 'int'
  | 'number'
  | 'struct'
  | 'value'
  | 'strings'
  | 'structs'
  | 'stringMap'
  | 'quantityMap'
  | 'intOrString'
  | 'tag';

/** A message: named as istioctl's errors name it, with its fields by JSON name. */
export interface Message {
  readonly message: string;
  readonly fields: Readonly<Record<string, Field>>;
  /** How istioctl words an unknown field of this message: protobuf's (`in <message>`) or Go's JSON decoder's. */
  readonly decoder: 'protobuf' | 'json';
}

export type Field = Leaf | Message | { readonly enumOf: readonly string[] } | { readonly listOf: Message };

const proto = (message: string, fields: Record<string, Field>): Message => ({
  message: `istio.operator.v1alpha1.${message}`,
  fields,
  decoder: 'protobuf',
});
const goType = (message: string, fields: Record<string, Field>): Message => ({ message, fields, decoder: 'json' });

const RESOURCES = proto('Resources', { limits: 'quantityMap', requests: 'quantityMap' });
const TARGET_UTILIZATION = proto('TargetUtilizationConfig', { targetAverageUtilization: 'int' });
const LOGGING = proto('GlobalLoggingConfig', { level: 'string' });
const INT_OR_STRING: Field = 'intOrString';

const CNI_AMBIENT = proto('CNIAmbientConfig', {
  enabled: 'bool',
  configDir: 'string',
  dnsCapture: 'bool',
  ipv6: 'bool',
  reconcileIptablesOnStartup: 'bool',
  enablementSelectors: 'structs',
  shareHostNetworkNamespace: 'bool',
  enableAmbientDetectionRetry: 'bool',
});

const CNI_REPAIR = proto('CNIRepairConfig', {
  enabled: 'bool',
  hub: 'string',
  tag: 'tag',
  image: 'string',
  labelPods: 'bool',
  repairPods: 'bool',
  createEvents: 'string',
  deletePods: 'bool',
  brokenPodLabelKey: 'string',
  brokenPodLabelValue: 'string',
  initContainerName: 'string',
});

const CNI = proto('CNIConfig', {
  enabled: 'bool',
  hub: 'string',
  tag: 'tag',
  variant: 'string',
  image: 'string',
  pullPolicy: 'string',
  cniBinDir: 'string',
  cniConfDir: 'string',
  cniConfFileName: 'string',
  cniNetnsDir: 'string',
  excludeNamespaces: 'strings',
  affinity: 'struct',
  env: 'struct',
  daemonSetLabels: 'struct',
  podAnnotations: 'struct',
  podLabels: 'struct',
  psp_cluster_role: 'string',
  logging: LOGGING,
  repair: CNI_REPAIR,
  chained: 'bool',
  resource_quotas: proto('ResourceQuotas', { enabled: 'bool', pods: 'int' }),
  resources: RESOURCES,
  privileged: 'bool',
  seccompProfile: 'struct',
  ambient: CNI_AMBIENT,
  provider: 'string',
  rollingMaxUnavailable: INT_OR_STRING,
  istioOwnedCNIConfig: 'bool',
  istioOwnedCNIConfigFileName: 'string',
  useAppArmorAnnotation: 'bool',
  // In the istio-cni chart's values.yaml, not in CNIConfig: the DaemonSet's settings.
  tolerations: 'structs',
  updateStrategy: 'struct',
  terminationGracePeriodSeconds: 'int',
  seLinuxOptions: 'struct',
  resourceQuotas: proto('ResourceQuotas', { enabled: 'bool', pods: 'int' }),
});

const CNI_USAGE = proto('CNIUsageConfig', { enabled: 'bool', chained: 'bool', provider: 'string' });

const PROXY = proto('ProxyConfig', {
  autoInject: 'string',
  clusterDomain: 'string',
  componentLogLevel: 'string',
  enableCoreDump: 'bool',
  excludeInboundPorts: 'string',
  excludeIPRanges: 'string',
  image: 'string',
  includeIPRanges: 'string',
  logLevel: 'string',
  outlierLogPath: 'string',
  privileged: 'bool',
  readinessInitialDelaySeconds: 'uint',
  readinessPeriodSeconds: 'uint',
  readinessFailureThreshold: 'uint',
  seccompProfile: 'struct',
  startupProbe: proto('StartupProbe', { enabled: 'bool', failureThreshold: 'uint' }),
  statusPort: 'uint',
  resources: RESOURCES,
  tracer: { enumOf: ['zipkin', 'lightstep', 'datadog', 'stackdriver', 'openCensusAgent', 'none'] },
  excludeOutboundPorts: 'string',
  lifecycle: 'struct',
  holdApplicationUntilProxyStarts: 'bool',
  includeInboundPorts: 'string',
  includeOutboundPorts: 'string',
});

const GLOBAL = proto('GlobalConfig', {
  arch: 'struct',
  certSigners: 'strings',
  configValidation: 'bool',
  defaultNodeSelector: 'struct',
  defaultPodDisruptionBudget: proto('DefaultPodDisruptionBudgetConfig', { enabled: 'bool' }),
  defaultResources: proto('DefaultResourcesConfig', {
    requests: proto('ResourcesRequestsConfig', { cpu: 'string', memory: 'string' }),
  }),
  defaultTolerations: 'structs',
  hub: 'string',
  imagePullPolicy: 'string',
  imagePullSecrets: 'strings',
  istioNamespace: 'string',
  logAsJson: 'bool',
  logging: LOGGING,
  meshID: 'string',
  meshNetworks: 'struct',
  multiCluster: proto('MultiClusterConfig', {
    enabled: 'bool',
    clusterName: 'string',
    globalDomainSuffix: 'string',
    includeEnvoyFilter: 'bool',
  }),
  network: 'string',
  podDNSSearchNamespaces: 'strings',
  omitSidecarInjectorConfigMap: 'bool',
  operatorManageWebhooks: 'bool',
  priorityClassName: 'string',
  proxy: PROXY,
  proxy_init: proto('ProxyInitConfig', { image: 'string', resources: RESOURCES, forceApplyIptables: 'bool' }),
  sds: proto('SDSConfig', { token: 'struct' }),
  tag: 'tag',
  variant: 'string',
  tracer: 'struct',
  remotePilotAddress: 'string',
  istiod: proto('IstiodConfig', { enableAnalysis: 'bool' }),
  pilotCertProvider: 'string',
  jwtPolicy: 'string',
  sts: proto('STSConfig', { servicePort: 'uint' }),
  revision: 'string',
  mountMtlsCerts: 'bool',
  caAddress: 'string',
  externalIstiod: 'bool',
  configCluster: 'bool',
  caName: 'string',
  platform: 'string',
  ipFamilies: 'strings',
  ipFamilyPolicy: 'string',
  waypoint: proto('WaypointConfig', {
    resources: RESOURCES,
    affinity: 'struct',
    topologySpreadConstraints: 'structs',
    nodeSelector: 'struct',
    toleration: 'structs',
  }),
  trustBundleName: 'string',
  nativeNftables: 'bool',
  networkPolicy: proto('NetworkPolicyConfig', { enabled: 'bool' }),
  resourceScope: { enumOf: ['undefined', 'all', 'cluster', 'namespace'] },
  agentgateway: proto('Agentgateway', { image: 'string' }),
  enableReaderRBAC: 'bool',
  readerServiceAccount: proto('ReaderServiceAccount', { name: 'string', namespace: 'string' }),
});

const ISTIOD_REMOTE = proto('IstiodRemoteConfig', {
  injectionURL: 'string',
  injectionPath: 'string',
  injectionCABundle: 'string',
  enabled: 'bool',
  enabledLocalInjectorIstiod: 'bool',
});

const PILOT = proto('PilotConfig', {
  enabled: 'bool',
  autoscaleEnabled: 'bool',
  autoscaleMin: 'uint',
  autoscaleMax: 'uint',
  autoscaleBehavior: 'struct',
  replicaCount: 'uint',
  image: 'string',
  traceSampling: 'number',
  resources: RESOURCES,
  cpu: TARGET_UTILIZATION,
  nodeSelector: 'struct',
  keepaliveMaxServerConnectionAge: 'string',
  deploymentLabels: 'struct',
  podLabels: 'struct',
  configMap: 'bool',
  env: 'struct',
  affinity: 'struct',
  rollingMaxSurge: INT_OR_STRING,
  rollingMaxUnavailable: INT_OR_STRING,
  tolerations: 'structs',
  podAnnotations: 'struct',
  serviceAnnotations: 'struct',
  serviceAccountAnnotations: 'struct',
  jwksResolverExtraRootCA: 'string',
  hub: 'string',
  tag: 'tag',
  variant: 'string',
  seccompProfile: 'struct',
  topologySpreadConstraints: 'structs',
  extraContainerArgs: 'structs',
  volumeMounts: 'structs',
  volumes: 'structs',
  ipFamilies: 'strings',
  ipFamilyPolicy: 'string',
  memory: TARGET_UTILIZATION,
  cni: CNI_USAGE,
  taint: proto('PilotTaintControllerConfig', { enabled: 'bool', namespace: 'string', name: 'string' }),
  trustedZtunnelNamespace: 'string',
  istiodRemote: ISTIOD_REMOTE,
  envVarFrom: 'structs',
  crlConfigMapName: 'string',
});

/** The ztunnel chart's values (manifests/charts/ztunnel/values.yaml), which istioctl flattens into the chart. */
const ZTUNNEL: Message = {
  message: 'the ztunnel chart values',
  decoder: 'protobuf',
  fields: {
    hub: 'string',
    tag: 'tag',
    variant: 'string',
    image: 'string',
    network: 'string',
    global: 'struct',
    resourceName: 'string',
    labels: 'struct',
    annotations: 'struct',
    volumeMounts: 'structs',
    volumes: 'structs',
    tolerations: 'structs',
    nodeSelector: 'struct',
    affinity: 'struct',
    podAnnotations: 'struct',
    podLabels: 'struct',
    resources: RESOURCES,
    resourceQuotas: proto('ResourceQuotas', { enabled: 'bool', pods: 'int' }),
    peerCaCrl: { message: 'the ztunnel chart values (peerCaCrl)', decoder: 'protobuf', fields: { enabled: 'bool' } },
    imagePullSecrets: 'strings',
    env: 'struct',
    imagePullPolicy: 'string',
    multiCluster: {
      message: 'the ztunnel chart values (multiCluster)',
      decoder: 'protobuf',
      fields: { clusterName: 'string' },
    },
    meshConfig: 'struct',
    terminationGracePeriodSeconds: 'int',
    revision: 'string',
    caAddress: 'string',
    xdsAddress: 'string',
    istioNamespace: 'string',
    logLevel: 'string',
    logAsJson: 'bool',
    seLinuxOptions: 'struct',
    resourceScope: { enumOf: ['all', 'cluster', 'namespace'] },
    updateStrategy: 'struct',
    dnsPolicy: 'string',
    dnsConfig: 'struct',
    trustBundleName: 'string',
  },
};

/** istio.mesh.v1alpha1.MeshConfig's fields (istio/api mesh/v1alpha1/config.proto); nested messages are not checked. */
const MESH_FIELDS = [
  'proxyListenPort',
  'proxyInboundListenPort',
  'proxyHttpPort',
  'connectTimeout',
  'hboneIdleTimeout',
  'protocolDetectionTimeout',
  'tcpKeepalive',
  'ingressClass',
  'ingressService',
  'ingressControllerMode',
  'ingressSelector',
  'enableTracing',
  'accessLogFile',
  'accessLogFormat',
  'accessLogEncoding',
  'enableEnvoyAccessLogService',
  'disableEnvoyListenerLog',
  'defaultConfig',
  'outboundTrafficPolicy',
  'inboundTrafficPolicy',
  'configSources',
  'enableAutoMtls',
  'trustDomain',
  'trustDomainAliases',
  'caCertificates',
  'defaultServiceExportTo',
  'defaultVirtualServiceExportTo',
  'defaultDestinationRuleExportTo',
  'rootNamespace',
  'localityLbSetting',
  'zoneAwareLbSetting',
  'dnsRefreshRate',
  'h2UpgradePolicy',
  'inboundClusterStatName',
  'outboundClusterStatName',
  'certificates',
  'serviceSettings',
  'serviceScopeConfigs',
  'enablePrometheusMerge',
  'verifyCertificateAtClient',
  'ca',
  'extensionProviders',
  'defaultProviders',
  'discoverySelectors',
  'pathNormalization',
  'defaultHttpRetryPolicy',
  'tlsDefaults',
  'defaultTrafficPolicy',
  'serviceEntryVisibility',
] as const;

/** protojson takes a field by its JSON name or its proto name: `trustDomain` or `trust_domain`. */
const snake = (camel: string): string => camel.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

export const MESH_CONFIG: Message = {
  message: 'istio.mesh.v1alpha1.MeshConfig',
  decoder: 'protobuf',
  fields: Object.fromEntries(
    MESH_FIELDS.flatMap((f): [string, Field][] => {
      const type: Field = f === 'trustDomain' || f === 'rootNamespace' ? 'string' : 'value';
      return snake(f) === f
        ? [[f, type]]
        : [
            [f, type],
            [snake(f), type],
          ];
    }),
  ),
};

export const VALUES = proto('Values', {
  cni: CNI,
  gateways: proto('GatewaysConfig', {
    'istio-egressgateway': 'struct',
    enabled: 'bool',
    'istio-ingressgateway': 'struct',
    securityContext: 'value',
    seccompProfile: 'value',
  }),
  global: GLOBAL,
  pilot: PILOT,
  ztunnel: ZTUNNEL,
  telemetry: proto('TelemetryConfig', { enabled: 'bool', v2: 'struct' }),
  sidecarInjectorWebhook: proto('SidecarInjectorConfig', {
    enableNamespacesByDefault: 'bool',
    reinvocationPolicy: 'string',
    neverInjectSelector: 'structs',
    alwaysInjectSelector: 'structs',
    rewriteAppHTTPProbe: 'bool',
    injectedAnnotations: 'struct',
    injectionURL: 'string',
    templates: 'struct',
    defaultTemplates: 'strings',
  }),
  istio_cni: CNI_USAGE,
  revision: 'string',
  ownerName: 'string',
  meshConfig: MESH_CONFIG,
  base: proto('BaseConfig', {
    enableCRDTemplates: 'bool',
    excludedCRDs: 'strings',
    validationURL: 'string',
    enableIstioConfigCRDs: 'bool',
    validateGateway: 'bool',
    validationCABundle: 'string',
    validationFailurePolicy: 'string',
  }),
  istiodRemote: ISTIOD_REMOTE,
  revisionTags: 'strings',
  defaultRevision: 'string',
  profile: 'string',
  compatibilityVersion: 'string',
  experimental: proto('ExperimentalConfig', { stableValidationPolicy: 'bool' }),
  gatewayClasses: 'value',
});

/** components.<name>.k8s (operator/pkg/apis/types.go KubernetesResources). */
const K8S = goType('KubernetesResources', {
  affinity: 'struct',
  env: 'structs',
  hpaSpec: 'struct',
  imagePullPolicy: 'string',
  nodeSelector: 'stringMap',
  podDisruptionBudget: 'struct',
  podAnnotations: 'stringMap',
  priorityClassName: 'string',
  readinessProbe: 'struct',
  replicaCount: 'uint',
  resources: 'struct',
  service: 'struct',
  strategy: 'struct',
  tolerations: 'structs',
  serviceAnnotations: 'stringMap',
  securityContext: 'struct',
  volumes: 'structs',
  volumeMounts: 'structs',
  overlays: 'structs',
});

const COMPONENT = goType('ComponentSpec', {
  enabled: 'bool',
  namespace: 'string',
  hub: 'string',
  tag: 'tag',
  k8s: K8S,
});
const GATEWAY = goType('GatewayComponentSpec', {
  ...COMPONENT.fields,
  name: 'string',
  label: 'stringMap',
});

/** The IstioOperator resource (install.istio.io/v1alpha1), spec.values and spec.meshConfig included. */
export const ISTIO_OPERATOR = goType('IstioOperator', {
  apiVersion: 'string',
  kind: 'string',
  metadata: 'struct',
  spec: goType('IstioOperatorSpec', {
    profile: 'string',
    installPackagePath: 'string',
    hub: 'string',
    tag: 'tag',
    namespace: 'string',
    revision: 'string',
    compatibilityVersion: 'string',
    meshConfig: MESH_CONFIG,
    components: goType('IstioComponentSpec', {
      base: goType('BaseComponentSpec', { enabled: 'bool', k8s: K8S }),
      pilot: COMPONENT,
      cni: COMPONENT,
      ztunnel: COMPONENT,
      istiodRemote: COMPONENT,
      ingressGateways: { listOf: GATEWAY },
      egressGateways: { listOf: GATEWAY },
    }),
    values: VALUES,
    unvalidatedValues: 'value',
  }),
});
