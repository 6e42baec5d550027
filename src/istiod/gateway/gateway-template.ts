/**
 * The objects istiod's deployment controller creates for a Gateway: its ServiceAccount, Deployment and Service, as
 * Istio's injection templates render them (istio `manifests/charts/istio-control/istio-discovery/files/waypoint.yaml`
 * for the `istio-waypoint` class, `kube-gateway.yaml` for the `istio` class, filled in by
 * `pilot/pkg/config/kube/gatewaycommon/deploymentcontroller.go`): the same names, labels, annotations, ports,
 * probes, environment and volumes. The HorizontalPodAutoscaler and PodDisruptionBudget the templates also hold are
 * rendered by Istio only when a class or parameters overlay asks for them; amesh renders none.
 *
 * The two templates differ where Istio's do: a waypoint is named after its Gateway, runs `proxy waypoint`, is not
 * captured (`istio.io/dataplane-mode: none`) and has a ClusterIP Service; an ingress gateway is named
 * `<Gateway>-<class>`, runs `proxy router`, lets its unprivileged user bind low ports (the pod's
 * `net.ipv4.ip_unprivileged_port_start` sysctl) and has a LoadBalancer Service unless the Gateway's
 * `networking.istio.io/service-type` annotation says otherwise, at `spec.addresses[0]` when that is an IP.
 *
 * Where amesh differs: the container runs amesh's image (`global.proxy.image` is `amesh`) with `amesh` as its
 * command and Istio's arguments, and the Go runtime's `GOMEMLIMIT` is not set.
 */
import { isIP } from 'node:net';
import { ISTIOD_GRPC_PORT } from '../../lib/istio-ports.js';
import { GATEWAY_MANAGED_LABEL, GATEWAY_NAME_LABEL } from '../model/waypoints.js';

export const GATEWAY_CLASS_NAME_LABEL = 'gateway.networking.k8s.io/gateway-class-name';
/** Annotations Istio reads on a Gateway and never copies onto what it renders. */
const NOT_COPIED = new Set([
  'kubectl.kubernetes.io/last-applied-configuration',
  'gateway.istio.io/name-override',
  'gateway.istio.io/service-account',
  'gateway.istio.io/controller-version',
]);
/** The proxy's status port (readiness `/healthz/ready`) and metrics port (`/stats/prometheus`), as Istio's proxies. */
export const PROXY_STATUS_PORT = 15021;
export const PROXY_METRICS_PORT = 15020;

type Obj = Record<string, unknown>;

/** The Gateway as the template reads it. */
export interface TemplateGateway {
  readonly metadata: {
    readonly name: string;
    readonly namespace: string;
    readonly uid: string;
    readonly labels: Readonly<Record<string, string>>;
    readonly annotations: Readonly<Record<string, string>>;
  };
  readonly spec: {
    readonly gatewayClassName: string;
    readonly listeners: readonly { readonly name: string; readonly port: number; readonly protocol: string }[];
    readonly addresses?: readonly { readonly type?: string | undefined; readonly value?: string | undefined }[];
    readonly infrastructure?: {
      readonly labels?: Readonly<Record<string, string>>;
      readonly annotations?: Readonly<Record<string, string>>;
    };
  };
}

/** What the template reads of the installation (the injector's `values`, istiod's own settings). */
export interface TemplateValues {
  /** `hub/image:tag`. */
  readonly image: string;
  readonly imagePullPolicy: string | undefined;
  readonly imagePullSecrets: readonly string[];
  readonly clusterDomain: string;
  readonly trustDomain: string;
  readonly clusterId: string;
  readonly network: string;
  readonly meshId: string;
  readonly revision: string;
  /** `istiod[-rev].<ns>.svc:15012`, or `global.caAddress`. */
  readonly caAddress: string;
  readonly pilotCertProvider: string;
  readonly logLevel: string;
  readonly logAsJson: boolean;
  /** `global.proxy.logLevel` and `global.proxy.componentLogLevel`: Envoy's levels, handed to a gateway's proxy. */
  readonly proxyLogLevel: string;
  readonly proxyComponentLogLevel: string;
  /** `global.waypoint`: affinity, nodeSelector, tolerations, topologySpreadConstraints, resources. */
  readonly waypoint: Readonly<Record<string, unknown>>;
}

/** What a class's controller renders (istio `pilot/pkg/config/kube/gatewaycommon/classinfo.go` `ClassInfo`). */
export interface ClassTemplate {
  readonly template: 'waypoint' | 'kube-gateway';
  /** The `gateway.istio.io/managed` value. */
  readonly controllerLabel: string;
  /** Whether names get `-<class>` appended (not for waypoints). */
  readonly nameSuffix: boolean;
  readonly defaultServiceType: 'ClusterIP' | 'LoadBalancer';
}

/**
 * The name of the Deployment, Service and (unless overridden) ServiceAccount: `gateway.istio.io/name-override`, else
 * the Gateway's (a waypoint's) or `<Gateway>-<class>` (istio `GetDefaultName`).
 */
export function gatewayNames(
  gw: {
    readonly metadata: { readonly name: string; readonly annotations: Readonly<Record<string, string>> };
    readonly spec: { readonly gatewayClassName: string };
  },
  cls: { readonly nameSuffix: boolean },
): { deployment: string; serviceAccount: string } {
  const deployment =
    gw.metadata.annotations['gateway.istio.io/name-override'] ??
    (cls.nameSuffix ? `${gw.metadata.name}-${gw.spec.gatewayClassName}` : gw.metadata.name);
  return { deployment, serviceAccount: gw.metadata.annotations['gateway.istio.io/service-account'] ?? deployment };
}

/** Service ports: Istio's status port, then one per distinct listener port, named after the listener. */
function servicePorts(gw: TemplateGateway): Obj[] {
  const ports: Obj[] = [{ name: 'status-port', port: PROXY_STATUS_PORT, protocol: 'TCP', appProtocol: 'tcp' }];
  const used = new Set(['status-port']);
  const seen = new Set<number>();
  gw.spec.listeners.forEach((l, i) => {
    if (seen.has(l.port)) return;
    seen.add(l.port);
    let name = l.name.replaceAll('.', '-').slice(0, 63) || `${l.protocol.toLowerCase()}-${i}`;
    for (let suffix = `-${l.port}`; used.has(name); suffix += 'x') name = name.slice(0, 63 - suffix.length) + suffix;
    used.add(name);
    ports.push({ name, port: l.port, protocol: 'TCP', appProtocol: l.protocol.toLowerCase() });
  });
  return ports;
}

const field = (name: string, fieldPath: string): Obj => ({ name, valueFrom: { fieldRef: { fieldPath } } });

/** ServiceAccount, Deployment and Service for `gw`, as its class's template renders them. */
export function renderGateway(gw: TemplateGateway, v: TemplateValues, cls: ClassTemplate): Obj[] {
  const { name, namespace, uid } = gw.metadata;
  const { deployment, serviceAccount } = gatewayNames(gw, cls);
  const waypoint = cls.template === 'waypoint';
  const infraLabels = { ...gw.metadata.labels, ...gw.spec.infrastructure?.labels };
  const infraAnnotations = Object.fromEntries(
    Object.entries({ ...gw.metadata.annotations, ...gw.spec.infrastructure?.annotations }).filter(
      ([k]) => !NOT_COPIED.has(k),
    ),
  );
  const gatewayLabels = { [GATEWAY_NAME_LABEL]: name, [GATEWAY_CLASS_NAME_LABEL]: gw.spec.gatewayClassName };
  const managed = { [GATEWAY_MANAGED_LABEL]: cls.controllerLabel };
  const owner = [{ apiVersion: 'gateway.networking.k8s.io/v1', kind: 'Gateway', name, uid }];
  const meta = (objName: string, labels: Obj, annotations: Obj = infraAnnotations): Obj => ({
    name: objName,
    namespace,
    annotations,
    labels,
    ownerReferences: owner,
  });
  const type = gw.metadata.annotations['networking.istio.io/service-type'] ?? cls.defaultServiceType;
  const first = gw.spec.addresses?.[0]?.value;
  const requestedIp = first !== undefined && isIP(first) !== 0 ? first : undefined;
  const wp = v.waypoint;
  const optional = (key: string): Obj => (wp[key] === undefined || wp[key] === null ? {} : { [key]: wp[key] });
  const env: Obj[] = [
    ...(waypoint
      ? [field('ISTIO_META_SERVICE_ACCOUNT', 'spec.serviceAccountName'), field('ISTIO_META_NODE_NAME', 'spec.nodeName')]
      : []),
    { name: 'PILOT_CERT_PROVIDER', value: v.pilotCertProvider },
    { name: 'CA_ADDR', value: v.caAddress },
    field('POD_NAME', 'metadata.name'),
    field('POD_NAMESPACE', 'metadata.namespace'),
    field('INSTANCE_IP', 'status.podIP'),
    field('SERVICE_ACCOUNT', 'spec.serviceAccountName'),
    field('HOST_IP', 'status.hostIP'),
    { name: 'ISTIO_CPU_LIMIT', valueFrom: { resourceFieldRef: { resource: 'limits.cpu', divisor: '1' } } },
    { name: 'PROXY_CONFIG', value: JSON.stringify({ discoveryAddress: v.caAddress }) },
    ...(waypoint
      ? []
      : [
          { name: 'ISTIO_META_POD_PORTS', value: '[]' },
          { name: 'ISTIO_META_APP_CONTAINERS', value: '' },
        ]),
    { name: 'ISTIO_META_CLUSTER_ID', value: v.clusterId },
    ...(waypoint ? [] : [field('ISTIO_META_NODE_NAME', 'spec.nodeName')]),
    ...(v.network === '' ? [] : [{ name: 'ISTIO_META_NETWORK', value: v.network }]),
    { name: 'ISTIO_META_INTERCEPTION_MODE', value: 'REDIRECT' },
    { name: 'ISTIO_META_WORKLOAD_NAME', value: deployment },
    {
      name: 'ISTIO_META_OWNER',
      value: `kubernetes://apis/apps/v1/namespaces/${namespace}/deployments/${deployment}`,
    },
    ...(v.meshId !== '' || v.trustDomain !== ''
      ? [{ name: 'ISTIO_META_MESH_ID', value: v.meshId !== '' ? v.meshId : v.trustDomain }]
      : []),
    ...(v.trustDomain === '' ? [] : [{ name: 'TRUST_DOMAIN', value: v.trustDomain }]),
  ];
  const probe = (failureThreshold: number, periodSeconds: number, initialDelaySeconds: number): Obj => ({
    failureThreshold,
    httpGet: { path: '/healthz/ready', port: PROXY_STATUS_PORT, scheme: 'HTTP' },
    initialDelaySeconds,
    periodSeconds,
    successThreshold: 1,
    timeoutSeconds: 1,
  });
  return [
    {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: meta(serviceAccount, { ...infraLabels, ...gatewayLabels, ...(waypoint ? managed : {}) }),
    },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: meta(deployment, { ...infraLabels, ...gatewayLabels, ...managed }),
      spec: {
        selector: { matchLabels: { [GATEWAY_NAME_LABEL]: name } },
        template: {
          metadata: {
            annotations: {
              ...infraAnnotations,
              'istio.io/rev': v.revision,
              'prometheus.io/path': '/stats/prometheus',
              'prometheus.io/port': String(PROXY_METRICS_PORT),
              'prometheus.io/scrape': 'true',
            },
            labels: {
              'sidecar.istio.io/inject': 'false',
              ...(waypoint ? { 'istio.io/dataplane-mode': 'none' } : {}),
              'service.istio.io/canonical-name': deployment,
              'service.istio.io/canonical-revision': 'latest',
              ...infraLabels,
              ...gatewayLabels,
              ...managed,
            },
          },
          spec: {
            ...(waypoint
              ? {
                  ...optional('affinity'),
                  ...optional('topologySpreadConstraints'),
                  ...optional('nodeSelector'),
                  ...optional('tolerations'),
                }
              : { securityContext: { sysctls: [{ name: 'net.ipv4.ip_unprivileged_port_start', value: '0' }] } }),
            serviceAccountName: serviceAccount,
            containers: [
              {
                name: 'istio-proxy',
                ports: [
                  { containerPort: PROXY_METRICS_PORT, name: 'metrics', protocol: 'TCP' },
                  { containerPort: PROXY_STATUS_PORT, name: 'status-port', protocol: 'TCP' },
                  { containerPort: 15090, protocol: 'TCP', name: 'http-envoy-prom' },
                ],
                image: v.image,
                ...(v.imagePullPolicy === undefined ? {} : { imagePullPolicy: v.imagePullPolicy }),
                command: ['amesh'],
                args: [
                  'proxy',
                  waypoint ? 'waypoint' : 'router',
                  '--domain',
                  `$(POD_NAMESPACE).svc.${v.clusterDomain}`,
                  ...(waypoint
                    ? ['--serviceCluster', `${serviceAccount}.$(POD_NAMESPACE)`]
                    : ['--proxyLogLevel', v.proxyLogLevel, '--proxyComponentLogLevel', v.proxyComponentLogLevel]),
                  '--log_output_level',
                  v.logLevel,
                  ...(v.logAsJson ? ['--log_as_json'] : []),
                ],
                env,
                ...(waypoint ? optional('resources') : {}),
                startupProbe: probe(30, 1, 1),
                readinessProbe: probe(4, 15, 0),
                securityContext: {
                  privileged: false,
                  runAsGroup: 1337,
                  runAsUser: 1337,
                  allowPrivilegeEscalation: false,
                  readOnlyRootFilesystem: true,
                  runAsNonRoot: true,
                  capabilities: { drop: ['ALL'] },
                },
                volumeMounts: [
                  { mountPath: '/var/run/secrets/workload-spiffe-uds', name: 'workload-socket' },
                  { mountPath: '/var/run/secrets/istio', name: 'istiod-ca-cert' },
                  { mountPath: '/var/lib/istio/data', name: 'istio-data' },
                  { mountPath: '/etc/istio/proxy', name: 'istio-envoy' },
                  { mountPath: '/var/run/secrets/tokens', name: 'istio-token' },
                  { mountPath: '/etc/istio/pod', name: 'istio-podinfo' },
                ],
              },
            ],
            volumes: [
              { emptyDir: {}, name: 'workload-socket' },
              { emptyDir: { medium: 'Memory' }, name: 'istio-envoy' },
              { emptyDir: {}, name: 'istio-data' },
              {
                downwardAPI: {
                  items: [
                    { fieldRef: { fieldPath: 'metadata.labels' }, path: 'labels' },
                    { fieldRef: { fieldPath: 'metadata.annotations' }, path: 'annotations' },
                  ],
                },
                name: 'istio-podinfo',
              },
              {
                name: 'istio-token',
                projected: {
                  sources: [
                    { serviceAccountToken: { audience: 'istio-ca', expirationSeconds: 43200, path: 'istio-token' } },
                  ],
                },
              },
              { name: 'istiod-ca-cert', configMap: { name: 'istio-ca-root-cert' } },
            ],
            ...(v.imagePullSecrets.length === 0
              ? {}
              : { imagePullSecrets: v.imagePullSecrets.map((n) => ({ name: n })) }),
          },
        },
      },
    },
    waypoint
      ? {
          apiVersion: 'v1',
          kind: 'Service',
          metadata: meta(
            deployment,
            { ...infraLabels, ...gatewayLabels, ...managed },
            { 'networking.istio.io/traffic-distribution': 'PreferClose', ...infraAnnotations },
          ),
          spec: {
            ipFamilyPolicy: 'PreferDualStack',
            ports: servicePorts(gw),
            selector: { [GATEWAY_NAME_LABEL]: name },
            type: 'ClusterIP',
          },
        }
      : {
          apiVersion: 'v1',
          kind: 'Service',
          metadata: meta(deployment, { ...infraLabels, ...gatewayLabels }),
          spec: {
            ipFamilyPolicy: 'PreferDualStack',
            ports: servicePorts(gw),
            selector: { [GATEWAY_NAME_LABEL]: name },
            ...(type === 'LoadBalancer' && requestedIp !== undefined ? { loadBalancerIP: requestedIp } : {}),
            type,
          },
        },
  ];
}

/** istiod's own address for the CA, as the template's default `CA_ADDR` (`istiod[-rev].<ns>.svc:15012`). */
export function defaultCaAddress(revision: string, istioNamespace: string): string {
  return `istiod${revision === 'default' || revision === '' ? '' : `-${revision}`}.${istioNamespace}.svc:${ISTIOD_GRPC_PORT}`;
}
