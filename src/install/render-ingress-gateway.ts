/**
 * The ingress gateway chart's objects, one set per enabled `components.ingressGateways[]` entry, as istioctl renders
 * them from istio manifests/charts/gateways/istio-ingress/templates (values under `gateways.istio-ingressgateway`):
 * - the Deployment `<name>` (deployment.yaml): pods labelled with the gateway's `labels` (`app:
 *   istio-ingressgateway`, `istio: ingressgateway` by default, so that Istio Gateways with `selector: {istio:
 *   ingressgateway}` configure them) and `istio.io/dataplane-mode: none`, running as uid 1337, not root, with the
 *   proxy container `istio-proxy` on the Service's target ports, ready by `/healthz/ready` on 15021, the istio-ca
 *   token projected and istiod's root from the `istio-ca-root-cert` ConfigMap;
 * - the ServiceAccount `<name>-service-account` (serviceaccount.yaml);
 * - the Role and RoleBinding `<name>-sds` letting it read the Secrets of its namespace (role.yaml,
 *   rolebindings.yaml): istiod serves a Gateway's `credentialName` over SDS only to a proxy whose service account
 *   may list them (a SubjectAccessReview);
 * - the Service `<name>` (service.yaml): LoadBalancer by default, ports status-port 15021, http2 80→8080 and https
 *   443→8443 unless `ports` (an entry's `k8s.service.ports`) says otherwise; none with `customService`;
 * - the HorizontalPodAutoscaler (autoscale.yaml, on by default, 1 to 5 replicas by CPU), the PodDisruptionBudget
 *   (poddisruptionbudget.yaml, only with more than one replica) and the NetworkPolicy (networkpolicy.yaml, with
 *   `global.networkPolicy.enabled`).
 *
 * The container runs amesh's gateway proxy (`amesh proxy router`, src/cli/proxy.ts) with the chart's arguments and
 * environment, which is what the router reads (POD_NAME, POD_NAMESPACE, INSTANCE_IP, CA_ADDR, TRUST_DOMAIN,
 * ISTIO_META_WORKLOAD_NAME: the Deployment, by which istiod finds the pods an Istio Gateway selects). Where amesh
 * differs:
 * - the image is `<global.hub>/<global.proxy.image>:<tag>` with amesh's image name, and `amesh` is the command;
 * - PROXY_CONFIG carries the mesh's discoveryAddress (`meshConfig.defaultConfig.discoveryAddress`, else istiod's
 *   Service), which Istio's pilot-agent reads from the `istio` ConfigMap mounted at /etc/istio/config and amesh's
 *   router reads from env;
 * - `--stsPort` (`global.sts.servicePort`) is not passed: the router has no STS server;
 * - the pod's affinity is left out when the chart's would be empty (the chart prints null node-affinity terms);
 * - `injectionTemplate` is refused: the chart's injected Deployment needs a sidecar injector, and amesh has none.
 */
import { ISTIOD_GRPC_PORT } from '../lib/istio-ports.js';
import { MeshError } from '../lib/errors.js';
import { isRecord } from '../lib/record.js';
import { PROXY_METRICS_PORT, PROXY_STATUS_PORT } from '../istiod/gateway/gateway-template.js';
import {
  RELEASE,
  envFromMap,
  fieldEnv,
  goString,
  imageReference,
  istioLabels,
  resourcesBlock,
  stringValues,
  textAt,
  truthy,
  type RenderedObject,
} from './chart-helpers.js';
import { at, type Tree } from './value-tree.js';

/** Envoy's Prometheus port, which the chart declares on the container (amesh's router serves metrics on 15020). */
const ENVOY_PROMETHEUS_PORT = 15090;
/** The uid and gid of Istio's proxy image, which the chart runs the gateway as unless `runAsRoot`. */
const PROXY_UID = 1337;
/** What the chart calls the component in its labels. */
const COMPONENT = 'IngressGateways';
const APP_NAME = 'istio-ingressgateway';

const list = (v: unknown): Tree[] => (Array.isArray(v) ? v.filter(isRecord) : []);
const optional = (v: unknown, key: string): Tree => (truthy(v) ? { [key]: v } : {});

/** What the templates share: the gateway's values, names and the labels every object carries. */
interface Gateway {
  readonly values: Tree;
  readonly gw: Tree;
  readonly name: string;
  readonly namespace: string;
  readonly revision: string;
  /** `labels`: the pods' and the selectors'. */
  readonly labels: Record<string, string>;
  /** release, istio.io/rev, owning-resource, component, app.kubernetes.io/name, and istio.labels. */
  readonly owned: Record<string, string>;
}

function gatewayOf(values: Tree, namespace: string): Gateway {
  const gw = (at(values, 'gateways.istio-ingressgateway') ?? {}) as Tree;
  if (truthy(gw['injectionTemplate']))
    throw new MeshError(
      'INSTALL_ERR_VALUES',
      `values.gateways.istio-ingressgateway.injectionTemplate: amesh injects no proxies, so the gateway cannot be rendered for injection; leave injectionTemplate empty`,
    );
  const revision = textAt(values, 'revision');
  return {
    values,
    gw,
    name: goString(gw['name']),
    namespace,
    revision,
    labels: stringValues(gw['labels']),
    owned: {
      release: RELEASE,
      'istio.io/rev': revision || 'default',
      'install.operator.istio.io/owning-resource': textAt(values, 'ownerName', 'unknown'),
      'operator.istio.io/component': COMPONENT,
      'app.kubernetes.io/name': APP_NAME,
      ...istioLabels('ingress'),
    },
  };
}

/** `nodeaffinity` and `podAntiAffinity` of the chart's _affinity.tpl, without the parts that would be empty. */
function affinity(g: Gateway): Tree {
  const arch = (at(g.values, 'global.arch') ?? {}) as Tree;
  const weighted = Object.keys(arch)
    .sort()
    .filter((k) => Math.trunc(Number(arch[k])) > 0);
  const nodeSelector = truthy(g.gw['nodeSelector']) ? g.gw['nodeSelector'] : at(g.values, 'global.defaultNodeSelector');
  const selectorEntries = isRecord(nodeSelector) ? Object.keys(nodeSelector).sort() : [];
  const required =
    weighted.length > 0 || selectorEntries.length > 0
      ? {
          nodeSelectorTerms: [
            {
              matchExpressions: [
                ...(weighted.length > 0 ? [{ key: 'kubernetes.io/arch', operator: 'In', values: weighted }] : []),
                ...selectorEntries.map((k) => ({
                  key: k,
                  operator: 'In',
                  values: [goString((nodeSelector as Tree)[k])],
                })),
              ],
            },
          ],
        }
      : undefined;
  const preferred = weighted.map((k) => ({
    weight: Math.trunc(Number(arch[k])),
    preference: { matchExpressions: [{ key: 'kubernetes.io/arch', operator: 'In', values: [k] }] },
  }));
  const term = (item: Tree): Tree => ({
    labelSelector: {
      matchExpressions: [
        {
          key: item['key'],
          operator: item['operator'],
          ...(truthy(item['values']) ? { values: goString(item['values']).split(',') } : {}),
        },
      ],
    },
    topologyKey: item['topologyKey'],
  });
  const antiRequired = list(g.gw['podAntiAffinityLabelSelector']).map((item) => ({
    ...term(item),
    ...(truthy(item['namespaces']) ? { namespaces: goString(item['namespaces']).split(',') } : {}),
  }));
  const antiPreferred = list(g.gw['podAntiAffinityTermLabelSelector']).map((item) => ({
    podAffinityTerm: term(item),
    weight: 100,
  }));
  const nodeAffinity = {
    ...(required === undefined ? {} : { requiredDuringSchedulingIgnoredDuringExecution: required }),
    ...optional(preferred, 'preferredDuringSchedulingIgnoredDuringExecution'),
  };
  const podAntiAffinity = {
    ...optional(antiRequired, 'requiredDuringSchedulingIgnoredDuringExecution'),
    ...optional(antiPreferred, 'preferredDuringSchedulingIgnoredDuringExecution'),
  };
  return { ...optional(nodeAffinity, 'nodeAffinity'), ...optional(podAntiAffinity, 'podAntiAffinity') };
}

/** istiod's gRPC address, as the chart's CA_ADDR names it (`istiod[-<revision>].<istio namespace>.svc:15012`). */
function istiodAddress(g: Gateway): string {
  const suffix = g.revision === '' ? '' : `-${g.revision}`;
  return `istiod${suffix}.${goString(at(g.values, 'global.istioNamespace'))}.svc:${ISTIOD_GRPC_PORT}`;
}

function container(g: Gateway): Tree {
  const { values, gw, name, namespace } = g;
  const runAsRoot = gw['runAsRoot'] === true;
  const meshId = at(values, 'global.meshID');
  const trustDomain = at(values, 'meshConfig.trustDomain');
  const network = at(values, 'global.network');
  const userEnv = isRecord(gw['env']) ? gw['env'] : {};
  const env: Tree[] = [
    { name: 'PILOT_CERT_PROVIDER', value: goString(at(values, 'global.pilotCertProvider')) },
    { name: 'CA_ADDR', value: textAt(values, 'global.caAddress', istiodAddress(g)) },
    fieldEnv('NODE_NAME', 'spec.nodeName', 'v1'),
    fieldEnv('POD_NAME', 'metadata.name', 'v1'),
    fieldEnv('POD_NAMESPACE', 'metadata.namespace', 'v1'),
    fieldEnv('INSTANCE_IP', 'status.podIP', 'v1'),
    fieldEnv('HOST_IP', 'status.hostIP', 'v1'),
    { name: 'ISTIO_CPU_LIMIT', valueFrom: { resourceFieldRef: { resource: 'limits.cpu', divisor: '1' } } },
    fieldEnv('SERVICE_ACCOUNT', 'spec.serviceAccountName'),
    { name: 'ISTIO_META_WORKLOAD_NAME', value: name },
    { name: 'ISTIO_META_OWNER', value: `kubernetes://apis/apps/v1/namespaces/${namespace}/deployments/${name}` },
    ...(truthy(meshId) || truthy(trustDomain)
      ? [{ name: 'ISTIO_META_MESH_ID', value: goString(truthy(meshId) ? meshId : trustDomain) }]
      : []),
    ...(truthy(trustDomain) ? [{ name: 'TRUST_DOMAIN', value: goString(trustDomain) }] : []),
    ...(runAsRoot ? [] : [{ name: 'ISTIO_META_UNPRIVILEGED_POD', value: 'true' }]),
    ...envFromMap(userEnv),
    ...envFromMap(at(values, 'meshConfig.defaultConfig.proxyMetadata')),
    ...(!truthy(userEnv['ISTIO_META_NETWORK']) && truthy(network)
      ? [{ name: 'ISTIO_META_NETWORK', value: goString(network) }]
      : []),
    { name: 'ISTIO_META_CLUSTER_ID', value: textAt(values, 'global.multiCluster.clusterName', 'Kubernetes') },
    fieldEnv('ISTIO_META_NODE_NAME', 'spec.nodeName'),
    {
      name: 'PROXY_CONFIG',
      value: JSON.stringify({
        discoveryAddress: textAt(values, 'meshConfig.defaultConfig.discoveryAddress', istiodAddress(g)),
      }),
    },
  ];
  const istiodCa = at(values, 'global.pilotCertProvider') === 'istiod';
  const logLevel = textAt(values, 'global.logging.level');
  const proxyLogLevel = textAt(values, 'global.proxy.logLevel');
  const componentLogLevel = textAt(values, 'global.proxy.componentLogLevel');
  const resources = truthy(gw['resources']) ? gw['resources'] : at(values, 'global.defaultResources');
  const pullPolicy = at(values, 'global.imagePullPolicy');
  const tag = textAt(gw, 'tag', textAt(values, 'global.tag'));
  return {
    name: 'istio-proxy',
    image: imageReference(textAt(values, 'global.proxy.image', 'proxyv2'), textAt(values, 'global.hub'), tag),
    ...optional(pullPolicy, 'imagePullPolicy'),
    ports: [
      ...list(gw['ports']).map((p) => ({
        containerPort: truthy(p['targetPort']) ? p['targetPort'] : p['port'],
        protocol: textAt(p, 'protocol', 'TCP'),
      })),
      { containerPort: ENVOY_PROMETHEUS_PORT, protocol: 'TCP', name: 'http-envoy-prom' },
    ],
    command: ['amesh'],
    args: [
      'proxy',
      'router',
      '--domain',
      `$(POD_NAMESPACE).svc.${textAt(values, 'global.proxy.clusterDomain')}`,
      ...(proxyLogLevel === '' ? [] : [`--proxyLogLevel=${proxyLogLevel}`]),
      ...(componentLogLevel === '' ? [] : [`--proxyComponentLogLevel=${componentLogLevel}`]),
      ...(logLevel === '' ? [] : [`--log_output_level=${logLevel}`]),
      ...(at(values, 'global.logAsJson') === true ? ['--log_as_json'] : []),
    ],
    ...(runAsRoot
      ? {}
      : {
          securityContext: {
            allowPrivilegeEscalation: false,
            capabilities: { drop: ['ALL'] },
            privileged: false,
            readOnlyRootFilesystem: true,
          },
        }),
    readinessProbe: {
      failureThreshold: 30,
      httpGet: { path: '/healthz/ready', port: PROXY_STATUS_PORT, scheme: 'HTTP' },
      initialDelaySeconds: 1,
      periodSeconds: 2,
      successThreshold: 1,
      timeoutSeconds: 1,
    },
    resources: resourcesBlock(resources),
    env,
    volumeMounts: [
      { name: 'workload-socket', mountPath: '/var/run/secrets/workload-spiffe-uds' },
      { name: 'credential-socket', mountPath: '/var/run/secrets/credential-uds' },
      { name: 'workload-certs', mountPath: '/var/run/secrets/workload-spiffe-credentials' },
      { name: 'istio-envoy', mountPath: '/etc/istio/proxy' },
      { name: 'config-volume', mountPath: '/etc/istio/config' },
      ...(istiodCa ? [{ mountPath: '/var/run/secrets/istio', name: 'istiod-ca-cert' }] : []),
      { name: 'istio-token', mountPath: '/var/run/secrets/tokens', readOnly: true },
      ...(at(values, 'global.mountMtlsCerts') === true
        ? [{ name: 'istio-certs', mountPath: '/etc/certs', readOnly: true }]
        : []),
      { mountPath: '/var/lib/istio/data', name: 'istio-data' },
      { name: 'podinfo', mountPath: '/etc/istio/pod' },
      ...list(gw['secretVolumes']).map((v) => ({
        name: v['name'],
        mountPath: goString(v['mountPath']),
        readOnly: true,
      })),
      ...list(gw['configVolumes'])
        .filter((v) => truthy(v['mountPath']))
        .map((v) => ({ name: v['name'], mountPath: goString(v['mountPath']), readOnly: true })),
    ],
  };
}

function volumes(g: Gateway): Tree[] {
  const { values, gw } = g;
  const trustBundle = textAt(values, 'global.trustBundleName');
  const clusterTrustBundle = at(values, 'pilot.env.ENABLE_CLUSTER_TRUST_BUNDLE_API') === true;
  return [
    { emptyDir: {}, name: 'workload-socket' },
    { emptyDir: {}, name: 'credential-socket' },
    { emptyDir: {}, name: 'workload-certs' },
    ...(at(values, 'global.pilotCertProvider') === 'istiod'
      ? [
          clusterTrustBundle
            ? {
                name: 'istiod-ca-cert',
                projected: {
                  sources: [
                    {
                      clusterTrustBundle: {
                        name: `istio.io:istiod-ca:${trustBundle || 'root-cert'}`,
                        path: 'root-cert.pem',
                      },
                    },
                  ],
                },
              }
            : { name: 'istiod-ca-cert', configMap: { name: trustBundle || 'istio-ca-root-cert' } },
        ]
      : []),
    {
      name: 'podinfo',
      downwardAPI: {
        items: [
          { path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } },
          { path: 'annotations', fieldRef: { fieldPath: 'metadata.annotations' } },
        ],
      },
    },
    { name: 'istio-envoy', emptyDir: {} },
    { name: 'istio-data', emptyDir: {} },
    {
      name: 'istio-token',
      projected: {
        sources: [
          {
            serviceAccountToken: {
              path: 'istio-token',
              expirationSeconds: 43200,
              audience: goString(at(values, 'global.sds.token.aud')),
            },
          },
        ],
      },
    },
    ...(at(values, 'global.mountMtlsCerts') === true
      ? [{ name: 'istio-certs', secret: { secretName: 'istio.istio-ingressgateway-service-account', optional: true } }]
      : []),
    {
      name: 'config-volume',
      configMap: { name: g.revision === '' ? 'istio' : `istio-${g.revision}`, optional: true },
    },
    ...list(gw['secretVolumes']).map((v) => ({
      name: v['name'],
      secret: { secretName: goString(v['secretName']), optional: true },
    })),
    ...list(gw['configVolumes']).map((v) => ({
      name: v['name'],
      configMap: { name: goString(v['configMapName']), optional: true },
    })),
  ];
}

function deployment(g: Gateway): RenderedObject {
  const { values, gw, name, namespace, labels, owned } = g;
  const autoscale = gw['autoscaleEnabled'] === true;
  const runAsRoot = gw['runAsRoot'] === true;
  const platform = textAt(values, 'platform', textAt(values, 'global.platform'));
  const priorityClass = textAt(values, 'global.priorityClassName');
  const tolerations = truthy(gw['tolerations']) ? gw['tolerations'] : at(values, 'global.defaultTolerations');
  const canonicalRevision = labels['app.kubernetes.io/version'] || labels['version'] || g.revision || 'latest';
  const annotations: Record<string, string> = {
    'istio.io/rev': g.revision || 'default',
    ...(at(values, 'meshConfig.enablePrometheusMerge') === true
      ? {
          'prometheus.io/port': String(PROXY_METRICS_PORT),
          'prometheus.io/scrape': 'true',
          'prometheus.io/path': '/stats/prometheus',
        }
      : {}),
    'sidecar.istio.io/inject': 'false',
    ...stringValues(gw['podAnnotations']),
  };
  // The pods carry `release` only in istio-system, with the chart's other Helm 2 labels.
  const podOwned = Object.fromEntries(Object.entries(owned).filter(([k]) => k !== 'release'));
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {
      name,
      namespace,
      labels: { ...labels, ...owned, 'istio.io/dataplane-mode': 'none' },
    },
    spec: {
      ...(!autoscale && truthy(gw['replicaCount']) ? { replicas: gw['replicaCount'] } : {}),
      selector: { matchLabels: labels },
      strategy: { rollingUpdate: { maxSurge: gw['rollingMaxSurge'], maxUnavailable: gw['rollingMaxUnavailable'] } },
      template: {
        metadata: {
          labels: {
            ...labels,
            ...(namespace === 'istio-system' ? { heritage: 'Tiller', release: RELEASE, chart: 'gateways' } : {}),
            'service.istio.io/canonical-name': name,
            'service.istio.io/canonical-revision': canonicalRevision,
            ...podOwned,
            'sidecar.istio.io/inject': 'false',
            'istio.io/dataplane-mode': 'none',
          },
          annotations,
        },
        spec: {
          ...(runAsRoot
            ? {}
            : {
                securityContext: {
                  ...(platform === 'openshift' ? {} : { runAsUser: PROXY_UID, runAsGroup: PROXY_UID }),
                  runAsNonRoot: true,
                },
              }),
          serviceAccountName: `${name}-service-account`,
          ...optional(priorityClass, 'priorityClassName'),
          containers: [container(g), ...list(gw['additionalContainers'])],
          volumes: volumes(g),
          ...optional(affinity(g), 'affinity'),
          ...optional(tolerations, 'tolerations'),
        },
      },
    },
  };
}

function service(g: Gateway): RenderedObject {
  const { gw, name, namespace, labels, owned } = g;
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name,
      namespace,
      ...(truthy(gw['serviceAnnotations']) ? { annotations: stringValues(gw['serviceAnnotations']) } : {}),
      labels: { ...labels, ...owned },
    },
    spec: {
      ...optional(gw['loadBalancerIP'], 'loadBalancerIP'),
      ...optional(gw['loadBalancerSourceRanges'], 'loadBalancerSourceRanges'),
      ...optional(gw['externalTrafficPolicy'], 'externalTrafficPolicy'),
      type: gw['type'],
      selector: labels,
      ports: [
        ...list(gw['ports']).map((p) => ({ ...p })),
        ...list(gw['ingressPorts']).map((p) => ({ port: p['port'], name: p['name'] })),
      ],
      ...optional(gw['ipFamilyPolicy'], 'ipFamilyPolicy'),
      ...optional(gw['ipFamilies'], 'ipFamilies'),
    },
  };
}

function autoscaling(g: Gateway): RenderedObject[] {
  const { values, gw, name, namespace, labels, owned } = g;
  const out: RenderedObject[] = [];
  const autoscale = gw['autoscaleEnabled'] === true;
  const min = Math.trunc(Number(gw['autoscaleMin'] ?? 0));
  if (autoscale && truthy(gw['autoscaleMin']) && truthy(gw['autoscaleMax']))
    out.push({
      apiVersion: 'autoscaling/v2',
      kind: 'HorizontalPodAutoscaler',
      metadata: { name, namespace, labels: { ...labels, ...owned } },
      spec: {
        maxReplicas: gw['autoscaleMax'],
        minReplicas: gw['autoscaleMin'],
        scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name },
        metrics: [
          {
            type: 'Resource',
            resource: {
              name: 'cpu',
              target: { type: 'Utilization', averageUtilization: at(gw, 'cpu.targetAverageUtilization') },
            },
          },
        ],
      },
    });
  const replicas = Math.trunc(Number(gw['replicaCount'] ?? 0));
  if (
    at(values, 'global.defaultPodDisruptionBudget.enabled') === true &&
    ((autoscale && min > 1) || (!autoscale && replicas > 1))
  )
    out.push({
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
      metadata: { name, namespace, labels: { ...labels, ...owned } },
      spec: { minAvailable: 1, selector: { matchLabels: labels } },
    });
  return out;
}

function networkPolicy(g: Gateway): RenderedObject {
  const { gw, name, namespace, labels, owned } = g;
  const tcp = (port: number): Tree => ({ protocol: 'TCP', port });
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: {
      name: g.revision === '' ? name : `${name}-${g.revision}`,
      namespace,
      labels: { app: name, istio: 'ingressgateway', ...owned },
    },
    spec: {
      podSelector: { matchLabels: labels },
      policyTypes: ['Ingress', 'Egress'],
      ingress: [
        { ports: [tcp(PROXY_STATUS_PORT)] },
        { ports: [tcp(PROXY_METRICS_PORT), tcp(ENVOY_PROMETHEUS_PORT)] },
        ...list(gw['ports']).map((p) => ({
          ports: [
            { protocol: textAt(p, 'protocol', 'TCP'), port: truthy(p['targetPort']) ? p['targetPort'] : p['port'] },
          ],
        })),
      ],
      egress: [{}],
    },
  };
}

/** The chart's objects for one ingress gateway, in `namespace`. */
export function renderIngressGateway(values: Tree, namespace: string): RenderedObject[] {
  const g = gatewayOf(values, namespace);
  const { values: v, gw, name, labels, owned } = g;
  const pullSecrets = at(v, 'global.imagePullSecrets');
  const accountAnnotations = at(gw, 'serviceAccount.annotations');
  const rbacLabels = { ...owned };
  const out: RenderedObject[] = [
    deployment(g),
    {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      ...(Array.isArray(pullSecrets) && pullSecrets.length > 0
        ? { imagePullSecrets: pullSecrets.map((n) => ({ name: goString(n) })) }
        : {}),
      metadata: {
        name: `${name}-service-account`,
        namespace,
        labels: { ...labels, ...owned },
        ...(truthy(accountAnnotations) ? { annotations: stringValues(accountAnnotations) } : {}),
      },
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: `${name}-sds`, namespace, labels: rbacLabels },
      rules: [{ apiGroups: [''], resources: ['secrets'], verbs: ['get', 'watch', 'list'] }],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: `${name}-sds`, namespace, labels: rbacLabels },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: `${name}-sds` },
      subjects: [{ kind: 'ServiceAccount', name: `${name}-service-account` }],
    },
    ...autoscaling(g),
  ];
  if (gw['customService'] !== true) out.push(service(g));
  if (at(v, 'global.networkPolicy.enabled') === true) out.push(networkPolicy(g));
  return out;
}
