/**
 * The objects that run the cluster's DNS, as kubeadm names and shapes CoreDNS's (kubernetes
 * cmd/kubeadm/app/phases/addons/dns/manifests.go, dns.go): the `kube-system/coredns` ServiceAccount, the
 * `kube-system/coredns` Deployment (`k8s-app: kube-dns`, running `amesh cluster-dns` in the `amesh` image, Ready by
 * `/ready` on 8181, live by `/health` on 8080, `dnsPolicy: Default` so that its upstream is the node's resolv.conf)
 * and the `kube-system/kube-dns` Service on the tenth address of the service CIDR; and the `system:coredns`
 * ClusterRole and ClusterRoleBinding that let the ServiceAccount list and watch what the DNS answers from.
 */
import type {
  V1ClusterRole,
  V1ClusterRoleBinding,
  V1Deployment,
  V1Service,
  V1ServiceAccount,
} from '@kubernetes/client-node';
import { MeshError } from '../lib/errors.js';
import { formatIp, parseCidr } from '../lib/ip.js';
import { packageRoot } from '../lib/package-root.js';
import { ameshCommand } from './amesh-command.js';
import { CLUSTER_DNS_DEFAULTS } from './cluster-dns-config.js';

const NAMESPACE = 'kube-system';
const NAME = 'coredns';
const LABELS = { 'k8s-app': 'kube-dns' } as const;
/** kubeadm's `GetDNSIP`: the DNS Service takes this address of the service CIDR. */
const DNS_IP_INDEX = 10n;
const DNS_PORT = 53;
const METRICS_PORT = Number(CLUSTER_DNS_DEFAULTS.metricsPort);
const HEALTH_PORT = Number(CLUSTER_DNS_DEFAULTS.healthPort);
const READY_PORT = Number(CLUSTER_DNS_DEFAULTS.readyPort);

export interface ClusterDnsManifestOptions {
  /** The API server's service CIDR (`--service-cidr`), whose tenth address is kube-dns's ClusterIP. */
  readonly serviceCidr: string;
  readonly clusterDomain?: string;
  /** kubeadm runs two. */
  readonly replicas?: number;
  /** A kubeconfig for `amesh cluster-dns` where the pods have no service-account credentials mounted. */
  readonly kubeconfig?: string;
}

/** The tenth address of `serviceCidr` (10.96.0.10 of 10.96.0.0/12), as kubeadm's `GetDNSIP` picks it. */
export function clusterDnsIp(serviceCidr: string): string {
  const c = parseCidr(serviceCidr);
  const bits = c === undefined ? 0 : c.bytes.length * 8;
  if (c === undefined || !serviceCidr.includes('/') || 2n ** BigInt(bits - c.prefix) <= DNS_IP_INDEX)
    throw new MeshError('AMESH_ERR_CONFIG', `service CIDR "${serviceCidr}" has no tenth address for the DNS Service`);
  let v = 0n;
  for (const b of c.bytes) v = (v << 8n) | BigInt(b);
  const host = BigInt(bits - c.prefix);
  v = ((v >> host) << host) + DNS_IP_INDEX;
  const out = Buffer.alloc(c.bytes.length);
  for (let i = out.length - 1; i >= 0; i--, v >>= 8n) out[i] = Number(v & 0xffn);
  return formatIp(out)!;
}

/** kubeadm's CoreDNSClusterRole and CoreDNSClusterRoleBinding. */
export function clusterDnsRbacObjects(): [V1ClusterRole, V1ClusterRoleBinding] {
  const name = 'system:coredns';
  const verbs = ['list', 'watch'];
  return [
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name },
      rules: [
        { apiGroups: [''], resources: ['endpoints', 'services', 'pods', 'namespaces'], verbs },
        { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
      subjects: [{ kind: 'ServiceAccount', name: NAME, namespace: NAMESPACE }],
    },
  ];
}

export function clusterDnsObjects(o: ClusterDnsManifestOptions): [V1ServiceAccount, V1Deployment, V1Service] {
  const domain = o.clusterDomain ?? CLUSTER_DNS_DEFAULTS.clusterDomain;
  const { cmd, args } = ameshCommand();
  const serviceAccount: V1ServiceAccount = {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { name: NAME, namespace: NAMESPACE },
  };
  const deployment: V1Deployment = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: NAME, namespace: NAMESPACE, labels: { ...LABELS } },
    spec: {
      replicas: o.replicas ?? 2,
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1 } },
      selector: { matchLabels: { ...LABELS } },
      template: {
        metadata: { labels: { ...LABELS } },
        spec: {
          priorityClassName: 'system-cluster-critical',
          serviceAccountName: NAME,
          affinity: {
            podAntiAffinity: {
              preferredDuringSchedulingIgnoredDuringExecution: [
                {
                  weight: 100,
                  podAffinityTerm: {
                    labelSelector: { matchExpressions: [{ key: 'k8s-app', operator: 'In', values: ['kube-dns'] }] },
                    topologyKey: 'kubernetes.io/hostname',
                  },
                },
              ],
            },
          },
          tolerations: [
            { key: 'CriticalAddonsOnly', operator: 'Exists' },
            { key: 'node-role.kubernetes.io/control-plane', effect: 'NoSchedule' },
          ],
          nodeSelector: { 'kubernetes.io/os': 'linux' },
          containers: [
            {
              name: NAME,
              image: 'amesh',
              imagePullPolicy: 'IfNotPresent',
              command: [
                cmd,
                ...args,
                'cluster-dns',
                '--cluster-domain',
                domain,
                ...(o.kubeconfig !== undefined ? ['--kubeconfig', o.kubeconfig] : []),
              ],
              // amesh's own checkout: where Node resolves what `amesh` imports at start (tsx, when it runs from source).
              workingDir: packageRoot(),
              resources: { limits: { memory: '170Mi' }, requests: { cpu: '100m', memory: '70Mi' } },
              ports: [
                { containerPort: DNS_PORT, name: 'dns', protocol: 'UDP' },
                { containerPort: DNS_PORT, name: 'dns-tcp', protocol: 'TCP' },
                { containerPort: METRICS_PORT, name: 'metrics', protocol: 'TCP' },
                { containerPort: HEALTH_PORT, name: 'liveness-probe', protocol: 'TCP' },
                { containerPort: READY_PORT, name: 'readiness-probe', protocol: 'TCP' },
              ],
              livenessProbe: {
                httpGet: { path: '/health', port: 'liveness-probe', scheme: 'HTTP' },
                initialDelaySeconds: 60,
                timeoutSeconds: 5,
                successThreshold: 1,
                failureThreshold: 5,
              },
              readinessProbe: { httpGet: { path: '/ready', port: 'readiness-probe', scheme: 'HTTP' } },
              securityContext: {
                allowPrivilegeEscalation: false,
                capabilities: { add: ['NET_BIND_SERVICE'], drop: ['ALL'] },
                readOnlyRootFilesystem: true,
              },
            },
          ],
          dnsPolicy: 'Default',
        },
      },
    },
  };
  const service: V1Service = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name: 'kube-dns',
      namespace: NAMESPACE,
      labels: { ...LABELS, 'kubernetes.io/cluster-service': 'true', 'kubernetes.io/name': 'CoreDNS' },
      annotations: { 'prometheus.io/port': String(METRICS_PORT), 'prometheus.io/scrape': 'true' },
    },
    spec: {
      clusterIP: clusterDnsIp(o.serviceCidr),
      ports: [
        { name: 'dns', port: DNS_PORT, protocol: 'UDP', targetPort: DNS_PORT },
        { name: 'dns-tcp', port: DNS_PORT, protocol: 'TCP', targetPort: DNS_PORT },
        { name: 'metrics', port: METRICS_PORT, protocol: 'TCP', targetPort: METRICS_PORT },
      ],
      selector: { ...LABELS },
    },
  };
  return [serviceAccount, deployment, service];
}
