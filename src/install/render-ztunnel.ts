/**
 * The ztunnel chart's objects (istio manifests/charts/ztunnel/templates): the `ztunnel` DaemonSet (in-pod mode on
 * the node's /var/run/ztunnel, Ready by /healthz/ready on 15021, its istio-ca token projected, istiod's root from the
 * `istio-ca-root-cert` ConfigMap), its ServiceAccount, and the ResourceQuota and NetworkPolicy when asked for.
 *
 * The container runs amesh's ztunnel (`amesh ztunnel`), which reads the same env as Istio's. Added to the chart's:
 * the files ztunnel would find relative to its working directory, named absolutely (XDS_ROOT_CA, CA_ROOT_CA,
 * AUTH_TOKEN: amesh's image has another working directory than ztunnel's `/`), and TRUST_DOMAIN and CLUSTER_DOMAIN
 * from the mesh config. The token's audience follows `global.sds.token.aud` (the chart fixes it to istio-ca, the
 * default), so that it matches the audience istiod accepts.
 */
import {
  HBONE_PORT,
  DNS_PROXY_PORT,
  INBOUND_PLAINTEXT_PORT,
  OUTBOUND_CAPTURE_PORT,
  ZTUNNEL_ADMIN_PORT,
  ZTUNNEL_READINESS_PORT,
  ZTUNNEL_STATS_PORT,
} from '../lib/istio-ports.js';
import {
  RELEASE,
  envFromMap,
  fieldEnv,
  goString,
  componentImage,
  istioLabels,
  networkPolicy,
  resourcesBlock,
  textAt,
  truthy,
  type RenderedObject,
} from './chart-helpers.js';
import { at, type Tree } from './value-tree.js';

/** Settings the mesh config holds that amesh's ztunnel reads from env. */
export interface MeshSettings {
  readonly trustDomain: string;
  readonly clusterDomain: string;
}

function container(values: Tree, mesh: MeshSettings): Tree {
  const revision = goString(at(values, 'revision') || '');
  const istiod = `istiod${revision === '' ? '' : `-${revision}`}.${goString(at(values, 'istioNamespace'))}.svc:15012`;
  const resources = at(values, 'resources');
  const proxyMetadata = at(values, 'meshConfig.defaultConfig.proxyMetadata');
  const network = at(values, 'network');
  const pullPolicy = at(values, 'imagePullPolicy');
  const seLinux = at(values, 'seLinuxOptions');
  const cpuEnv = (name: string, resource: string): Tree => ({
    name,
    valueFrom: { resourceFieldRef: { resource, divisor: '1' } },
  });
  const env: Tree[] = [
    { name: 'CA_ADDRESS', value: textAt(values, 'caAddress', istiod) },
    { name: 'XDS_ADDRESS', value: textAt(values, 'xdsAddress', istiod) },
    ...(at(values, 'logAsJson') === true ? [{ name: 'LOG_FORMAT', value: 'json' }] : []),
    ...(truthy(network) ? [{ name: 'NETWORK', value: goString(network) }] : []),
    { name: 'RUST_LOG', value: goString(at(values, 'logLevel')) },
    { name: 'RUST_BACKTRACE', value: '1' },
    { name: 'ISTIO_META_CLUSTER_ID', value: textAt(values, 'multiCluster.clusterName', 'Kubernetes') },
    { name: 'INPOD_ENABLED', value: 'true' },
    { name: 'TERMINATION_GRACE_PERIOD_SECONDS', value: goString(at(values, 'terminationGracePeriodSeconds')) },
    fieldEnv('POD_NAME', 'metadata.name'),
    fieldEnv('POD_NAMESPACE', 'metadata.namespace'),
    fieldEnv('NODE_NAME', 'spec.nodeName'),
    fieldEnv('INSTANCE_IP', 'status.podIP'),
    fieldEnv('SERVICE_ACCOUNT', 'spec.serviceAccountName'),
    ...envFromMap(proxyMetadata),
    cpuEnv('ZTUNNEL_CPU_LIMIT', 'limits.cpu'),
    ...(truthy(at(values, 'resources.limits.cpu')) ? [cpuEnv('ZTUNNEL_RESOURCE_CPU_LIMIT', 'limits.cpu')] : []),
    ...(truthy(at(values, 'resources.requests.cpu')) ? [cpuEnv('ZTUNNEL_RESOURCE_CPU_REQUEST', 'requests.cpu')] : []),
    ...envFromMap(at(values, 'env')),
    ...(at(values, 'peerCaCrl.enabled') === true
      ? [{ name: 'CRL_PATH', value: '/var/run/secrets/istio/crl/ca-crl.pem' }]
      : []),
  ];
  const amesh: Tree[] = [
    { name: 'XDS_ROOT_CA', value: '/var/run/secrets/istio/root-cert.pem' },
    { name: 'CA_ROOT_CA', value: '/var/run/secrets/istio/root-cert.pem' },
    { name: 'AUTH_TOKEN', value: '/var/run/secrets/tokens/istio-token' },
    { name: 'TRUST_DOMAIN', value: mesh.trustDomain },
    { name: 'CLUSTER_DOMAIN', value: mesh.clusterDomain },
  ];
  const named = new Set(env.map((e) => e['name']));
  return {
    name: 'istio-proxy',
    image: componentImage(values),
    ports: [{ containerPort: ZTUNNEL_STATS_PORT, name: 'ztunnel-stats', protocol: 'TCP' }],
    ...(truthy(resources) ? { resources: resourcesBlock(resources) } : {}),
    ...(truthy(pullPolicy) ? { imagePullPolicy: pullPolicy } : {}),
    securityContext: {
      allowPrivilegeEscalation: true,
      privileged: false,
      capabilities: { drop: ['ALL'], add: ['NET_ADMIN', 'SYS_ADMIN', 'NET_RAW'] },
      readOnlyRootFilesystem: true,
      runAsGroup: 1337,
      runAsNonRoot: false,
      runAsUser: 0,
      ...(truthy(seLinux) ? { seLinuxOptions: seLinux } : {}),
    },
    readinessProbe: { httpGet: { port: ZTUNNEL_READINESS_PORT, path: '/healthz/ready' } },
    command: ['amesh'],
    args: ['ztunnel'],
    env: [...env, ...amesh.filter((e) => !named.has(e['name']))],
    volumeMounts: [
      { mountPath: '/var/run/secrets/istio', name: 'istiod-ca-cert' },
      { mountPath: '/var/run/secrets/tokens', name: 'istio-token' },
      { mountPath: '/var/run/ztunnel', name: 'cni-ztunnel-sock-dir' },
      { mountPath: '/tmp', name: 'tmp' },
      ...(at(values, 'peerCaCrl.enabled') === true
        ? [{ mountPath: '/var/run/secrets/istio/crl', name: 'crl-volume', readOnly: true }]
        : []),
      ...((at(values, 'volumeMounts') as Tree[] | undefined) ?? []),
    ],
  };
}

function volumes(values: Tree): Tree[] {
  const trustBundle = textAt(values, 'trustBundleName', '');
  return [
    {
      name: 'istio-token',
      projected: {
        sources: [
          {
            serviceAccountToken: {
              path: 'istio-token',
              expirationSeconds: 43200,
              audience: textAt(values, 'sds.token.aud', 'istio-ca'),
            },
          },
        ],
      },
    },
    at(values, 'env.ENABLE_CLUSTER_TRUST_BUNDLE_API') === true
      ? {
          name: 'istiod-ca-cert',
          projected: {
            sources: [
              {
                clusterTrustBundle: { name: `istio.io:istiod-ca:${trustBundle || 'root-cert'}`, path: 'root-cert.pem' },
              },
            ],
          },
        }
      : { name: 'istiod-ca-cert', configMap: { name: trustBundle || 'istio-ca-root-cert' } },
    { name: 'cni-ztunnel-sock-dir', hostPath: { path: '/var/run/ztunnel', type: 'DirectoryOrCreate' } },
    { name: 'tmp', emptyDir: {} },
    ...(at(values, 'peerCaCrl.enabled') === true
      ? [{ name: 'crl-volume', configMap: { name: 'istio-ca-crl', optional: true } }]
      : []),
    ...((at(values, 'volumes') as Tree[] | undefined) ?? []),
  ];
}

export function renderZtunnel(values: Tree, namespace: string, mesh: MeshSettings): RenderedObject[] {
  const scope = at(values, 'resourceScope');
  if (scope !== 'all' && scope !== 'namespace') return [];
  const name = textAt(values, 'resourceName', 'ztunnel');
  const revision = goString(at(values, 'revision') || '');
  const labels = {
    'app.kubernetes.io/name': 'ztunnel',
    ...istioLabels('ztunnel'),
    ...((at(values, 'labels') ?? {}) as Record<string, string>),
  };
  const annotations = {
    ...((at(values, 'annotations') ?? {}) as Record<string, string>),
    ...(revision === '' ? {} : { 'istio.io/rev': revision }),
  };
  const nodeSelector = at(values, 'nodeSelector');
  const dnsPolicy = at(values, 'dnsPolicy');
  const dnsConfig = at(values, 'dnsConfig');
  const pullSecrets = at(values, 'imagePullSecrets') as string[];
  const out: RenderedObject[] = [
    {
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      metadata: { name, namespace, labels, annotations },
      spec: {
        ...(truthy(at(values, 'updateStrategy')) ? { updateStrategy: at(values, 'updateStrategy') } : {}),
        selector: { matchLabels: { app: 'ztunnel' } },
        template: {
          metadata: {
            labels: {
              'sidecar.istio.io/inject': 'false',
              'istio.io/dataplane-mode': 'none',
              app: 'ztunnel',
              'app.kubernetes.io/name': 'ztunnel',
              ...istioLabels('ztunnel'),
              ...((at(values, 'podLabels') ?? {}) as Record<string, string>),
            },
            annotations: {
              'sidecar.istio.io/inject': 'false',
              ...(revision === '' ? {} : { 'istio.io/rev': revision }),
              ...((at(values, 'podAnnotations') ?? {}) as Record<string, string>),
            },
          },
          spec: {
            nodeSelector: { 'kubernetes.io/os': 'linux', ...(truthy(nodeSelector) ? (nodeSelector as Tree) : {}) },
            ...(truthy(at(values, 'affinity')) ? { affinity: at(values, 'affinity') } : {}),
            serviceAccountName: name,
            ...(truthy(at(values, 'tolerations')) ? { tolerations: at(values, 'tolerations') } : {}),
            ...(truthy(dnsPolicy) ? { dnsPolicy } : {}),
            ...(truthy(dnsConfig) ? { dnsConfig } : {}),
            containers: [container(values, mesh)],
            priorityClassName: 'system-node-critical',
            terminationGracePeriodSeconds: at(values, 'terminationGracePeriodSeconds'),
            volumes: volumes(values),
          },
        },
      },
    },
    {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      ...(truthy(pullSecrets) ? { imagePullSecrets: pullSecrets.map((n) => ({ name: n })) } : {}),
      metadata: { name, namespace, labels, annotations },
    },
  ];
  if (at(values, 'resourceQuotas.enabled') === true)
    out.push({
      apiVersion: 'v1',
      kind: 'ResourceQuota',
      metadata: { name, namespace, labels },
      spec: {
        hard: { pods: goString(at(values, 'resourceQuotas.pods')) },
        scopeSelector: {
          matchExpressions: [{ operator: 'In', scopeName: 'PriorityClass', values: ['system-node-critical'] }],
        },
      },
    });
  if (at(values, 'global.networkPolicy.enabled') === true)
    out.push(
      networkPolicy(
        {
          name: revision === '' ? name : `${name}-${revision}`,
          namespace,
          labels: {
            app: 'ztunnel',
            'app.kubernetes.io/name': 'ztunnel',
            'istio.io/rev': revision || 'default',
            'install.operator.istio.io/owning-resource': textAt(values, 'ownerName', 'unknown'),
            'operator.istio.io/component': 'Ztunnel',
            release: RELEASE,
            ...istioLabels('ztunnel'),
          },
        },
        { app: 'ztunnel' },
        [
          [[ZTUNNEL_READINESS_PORT, 'TCP']],
          [[ZTUNNEL_STATS_PORT, 'TCP']],
          [[ZTUNNEL_ADMIN_PORT, 'TCP']],
          [[HBONE_PORT, 'TCP']],
          [[OUTBOUND_CAPTURE_PORT, 'TCP']],
          [[INBOUND_PLAINTEXT_PORT, 'TCP']],
          [
            [DNS_PROXY_PORT, 'TCP'],
            [DNS_PROXY_PORT, 'UDP'],
          ],
        ],
      ),
    );
  return out;
}
