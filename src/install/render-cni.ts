/**
 * The istio-cni chart's objects (istio manifests/charts/istio-cni/templates): the `istio-cni-node` DaemonSet, the
 * `istio-cni-config` ConfigMap its container takes its env from (the agent reads AMBIENT_ENABLEMENT_SELECTOR,
 * AMBIENT_DNS_CAPTURE, AMBIENT_IPV6, AMBIENT_RECONCILE_POD_RULES_ON_STARTUP and EXCLUDE_NAMESPACES from it), the
 * `istio-cni` ServiceAccount, the istio-cni, repair and ambient ClusterRoles and their bindings, and the
 * ResourceQuota and NetworkPolicy when asked for.
 *
 * The container runs amesh's node agent (`amesh cni-agent`), which differs from Istio's install-cni here:
 * - it works in the node's network and PID namespaces (its host rules, and the pods' namespaces it finds through
 *   /proc), so the pod has `hostNetwork` and `hostPID`: the chart's `ambient.shareHostNetworkNamespace` layout, and
 *   no ALLOW_SWITCH_TO_HOST_NS;
 * - it opens pods' network namespaces at the host path the CNI plugin reports, so the netns directory is also
 *   mounted at its own path, and iptables' lock (/run/xtables.lock) is the host's, shared with kube-proxy;
 * - `--log-level` stands for `--log_output_level`, LOG_FORMAT=json for `--log_as_json`.
 * The chart's mounts of the node's CNI bin and config directories are where the agent installs its plugin and chains
 * it into the node's network configuration (src/cni/install), as install-cni does.
 */
import { ameshLogLevel } from '../lib/istio-log-level.js';
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
import { CNI_MONITORING_PORT } from '../lib/istio-ports.js';
import { at, type Tree } from './value-tree.js';

const NAME = 'istio-cni';
/** The agent's readiness server (Istio cni/pkg/constants ReadinessPort). */
const READINESS_PORT = 8000;

function configMapData(values: Tree): Record<string, string> {
  const q = (path: string): string => goString(at(values, path));
  const owned = truthy(at(values, 'istioOwnedCNIConfig'));
  return {
    CURRENT_AGENT_VERSION: goString(at(values, 'tag') || at(values, 'global.tag')),
    AMBIENT_ENABLED: q('ambient.enabled'),
    AMBIENT_ENABLEMENT_SELECTOR: toYaml(at(values, 'ambient.enablementSelectors')),
    AMBIENT_DNS_CAPTURE: q('ambient.dnsCapture'),
    AMBIENT_IPV6: q('ambient.ipv6'),
    AMBIENT_RECONCILE_POD_RULES_ON_STARTUP: q('ambient.reconcileIptablesOnStartup'),
    ENABLE_AMBIENT_DETECTION_RETRY: q('ambient.enableAmbientDetectionRetry'),
    ...(truthy(at(values, 'cniConfFileName')) ? { CNI_CONF_NAME: q('cniConfFileName') } : {}),
    ISTIO_OWNED_CNI_CONFIG: q('istioOwnedCNIConfig'),
    ...(owned ? { ISTIO_OWNED_CNI_CONF_FILENAME: q('istioOwnedCNIConfigFileName') } : {}),
    CHAINED_CNI_PLUGIN: q('chained'),
    EXCLUDE_NAMESPACES: ((at(values, 'excludeNamespaces') as string[] | undefined) ?? []).join(','),
    REPAIR_ENABLED: q('repair.enabled'),
    REPAIR_LABEL_PODS: q('repair.labelPods'),
    REPAIR_DELETE_PODS: q('repair.deletePods'),
    REPAIR_REPAIR_PODS: q('repair.repairPods'),
    REPAIR_INIT_CONTAINER_NAME: q('repair.initContainerName'),
    REPAIR_BROKEN_POD_LABEL_KEY: q('repair.brokenPodLabelKey'),
    REPAIR_BROKEN_POD_LABEL_VALUE: q('repair.brokenPodLabelValue'),
    NATIVE_NFTABLES: q('global.nativeNftables'),
    ...stringValues(at(values, 'env')),
  };
}

function daemonSet(values: Tree, namespace: string, owned: Record<string, string>): RenderedObject {
  const ambient = at(values, 'ambient.enabled') === true;
  const procfs = ambient || at(values, 'repair.repairPods') === true;
  const logLevel = at(values, 'logging.level') || at(values, 'global.logging.level');
  const pullPolicy = at(values, 'pullPolicy') || at(values, 'global.imagePullPolicy');
  const netnsDir = String(at(values, 'cniNetnsDir'));
  const appArmorAnnotation = at(values, 'useAppArmorAnnotation') === true;
  const seLinux = at(values, 'seLinuxOptions');
  const seccomp = at(values, 'seccompProfile');
  const resources = at(values, 'resources');
  const labels = istioLabels('cni');
  return {
    kind: 'DaemonSet',
    apiVersion: 'apps/v1',
    metadata: {
      name: `${NAME}-node`,
      namespace,
      labels: {
        'k8s-app': `${NAME}-node`,
        release: RELEASE,
        ...owned,
        'app.kubernetes.io/name': NAME,
        ...labels,
        ...stringValues(at(values, 'daemonSetLabels')),
      },
    },
    spec: {
      selector: { matchLabels: { 'k8s-app': `${NAME}-node` } },
      ...(truthy(at(values, 'updateStrategy')) ? { updateStrategy: at(values, 'updateStrategy') } : {}),
      template: {
        metadata: {
          labels: {
            'k8s-app': `${NAME}-node`,
            'sidecar.istio.io/inject': 'false',
            'istio.io/dataplane-mode': 'none',
            'app.kubernetes.io/name': NAME,
            ...labels,
            ...stringValues(at(values, 'podLabels')),
          },
          annotations: {
            'sidecar.istio.io/inject': 'false',
            'prometheus.io/scrape': 'true',
            'prometheus.io/port': String(CNI_MONITORING_PORT),
            'prometheus.io/path': '/metrics',
            ...(appArmorAnnotation
              ? { 'container.apparmor.security.beta.kubernetes.io/install-cni': 'unconfined' }
              : {}),
            ...stringValues(at(values, 'podAnnotations')),
          },
        },
        spec: {
          hostNetwork: true,
          hostPID: true,
          dnsPolicy: 'ClusterFirstWithHostNet',
          nodeSelector: { 'kubernetes.io/os': 'linux' },
          ...(truthy(at(values, 'affinity')) ? { affinity: at(values, 'affinity') } : {}),
          ...(truthy(at(values, 'tolerations')) ? { tolerations: at(values, 'tolerations') } : {}),
          priorityClassName: 'system-node-critical',
          serviceAccountName: NAME,
          terminationGracePeriodSeconds: at(values, 'terminationGracePeriodSeconds'),
          containers: [
            {
              name: 'install-cni',
              image: componentImage(values),
              ...(truthy(pullPolicy) ? { imagePullPolicy: pullPolicy } : {}),
              ports: [{ containerPort: CNI_MONITORING_PORT, name: 'metrics', protocol: 'TCP' }],
              readinessProbe: { httpGet: { path: '/readyz', port: READINESS_PORT } },
              securityContext: {
                ...(appArmorAnnotation ? {} : { appArmorProfile: { type: 'Unconfined' } }),
                privileged: false,
                runAsGroup: 0,
                runAsUser: 0,
                runAsNonRoot: false,
                capabilities: {
                  drop: ['ALL'],
                  add: ['NET_ADMIN', 'NET_RAW', 'SYS_PTRACE', 'SYS_ADMIN', 'DAC_OVERRIDE'],
                },
                ...(truthy(seLinux) ? { seLinuxOptions: { ...(seLinux as Tree), type: 'spc_t' } } : {}),
                ...(truthy(seccomp) ? { seccompProfile: seccomp } : {}),
              },
              command: ['amesh'],
              args: ['cni-agent', ...(truthy(logLevel) ? ['--log-level', ameshLogLevel(String(logLevel))] : [])],
              envFrom: [{ configMapRef: { name: `${NAME}-config` } }],
              env: [
                fieldEnv('REPAIR_NODE_NAME', 'spec.nodeName'),
                { name: 'REPAIR_RUN_AS_DAEMON', value: 'true' },
                { name: 'REPAIR_SIDECAR_ANNOTATION', value: 'sidecar.istio.io/status' },
                fieldEnv('NODE_NAME', 'spec.nodeName', 'v1'),
                {
                  name: 'GOMEMLIMIT',
                  valueFrom: { resourceFieldRef: { resource: 'limits.memory', divisor: '1' } },
                },
                fieldEnv('POD_NAME', 'metadata.name'),
                fieldEnv('POD_NAMESPACE', 'metadata.namespace'),
                ...(at(values, 'global.logAsJson') === true ? [{ name: 'LOG_FORMAT', value: 'json' }] : []),
                ...envFromMap(at(values, 'env')),
              ],
              volumeMounts: [
                { mountPath: '/host/opt/cni/bin', name: 'cni-bin-dir' },
                ...(procfs ? [{ mountPath: '/host/proc', name: 'cni-host-procfs', readOnly: true }] : []),
                { mountPath: '/host/etc/cni/net.d', name: 'cni-net-dir' },
                { mountPath: '/var/run/istio-cni', name: 'cni-socket-dir' },
                ...(ambient
                  ? [
                      { mountPath: '/host/var/run/netns', mountPropagation: 'HostToContainer', name: 'cni-netns-dir' },
                      { mountPath: netnsDir, mountPropagation: 'HostToContainer', name: 'cni-netns-dir' },
                      { mountPath: '/var/run/ztunnel', name: 'cni-ztunnel-sock-dir' },
                    ]
                  : []),
                { mountPath: '/run/xtables.lock', name: 'xtables-lock' },
              ],
              resources: resourcesBlock(truthy(resources) ? resources : at(values, 'global.defaultResources')),
            },
          ],
          volumes: [
            { name: 'cni-bin-dir', hostPath: { path: at(values, 'cniBinDir') || '/opt/cni/bin' } },
            ...(procfs ? [{ name: 'cni-host-procfs', hostPath: { path: '/proc', type: 'Directory' } }] : []),
            ...(ambient
              ? [{ name: 'cni-ztunnel-sock-dir', hostPath: { path: '/var/run/ztunnel', type: 'DirectoryOrCreate' } }]
              : []),
            { name: 'cni-net-dir', hostPath: { path: at(values, 'cniConfDir') } },
            { name: 'cni-socket-dir', hostPath: { path: '/var/run/istio-cni' } },
            { name: 'cni-netns-dir', hostPath: { path: netnsDir, type: 'DirectoryOrCreate' } },
            { name: 'xtables-lock', hostPath: { path: '/run/xtables.lock', type: 'FileOrCreate' } },
          ],
        },
      },
    },
  };
}

export function renderCni(values: Tree, namespace: string): RenderedObject[] {
  const scope = at(values, 'global.resourceScope');
  const cluster = scope === 'all' || scope === 'cluster';
  const namespaced = scope === 'all' || scope === 'namespace';
  const owned = {
    'istio.io/rev': goString(at(values, 'revision') || 'default'),
    'install.operator.istio.io/owning-resource': textAt(values, 'ownerName', 'unknown'),
    'operator.istio.io/component': 'Cni',
  };
  const common = { release: RELEASE, ...owned, 'app.kubernetes.io/name': NAME, ...istioLabels('cni') };
  const labels = { app: NAME, ...common };
  const repairLabels = { 'k8s-app': `${NAME}-repair`, ...common };
  const subjects = [{ kind: 'ServiceAccount', name: NAME, namespace }];
  const clusterRole = (name: string, rules: Tree[]): RenderedObject => ({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name, labels },
    rules,
  });
  const binding = (name: string, role: string, l: Record<string, string>): RenderedObject => ({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name, labels: l },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
    subjects,
  });
  const out: RenderedObject[] = [];
  if (cluster) {
    out.push(
      clusterRole(NAME, [
        { apiGroups: [''], resources: ['pods', 'nodes', 'namespaces'], verbs: ['get', 'list', 'watch'] },
      ]),
    );
    out.push(binding(NAME, NAME, labels));
    if (at(values, 'repair.enabled') === true) {
      const rules: Tree[] = [
        { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
        { apiGroups: [''], resources: ['pods'], verbs: ['watch', 'get', 'list'] },
      ];
      if (at(values, 'repair.repairPods') !== true) {
        if (at(values, 'repair.deletePods') === true)
          rules.push({ apiGroups: [''], resources: ['pods'], verbs: ['delete'] });
        else if (at(values, 'repair.labelPods') === true)
          rules.push({ apiGroups: [''], resources: ['pods/status'], verbs: ['patch', 'update'] });
      }
      out.push(
        clusterRole(`${NAME}-repair-role`, rules),
        binding(`${NAME}-repair-rolebinding`, `${NAME}-repair-role`, repairLabels),
      );
    }
    if (at(values, 'ambient.enabled') === true)
      out.push(
        clusterRole(`${NAME}-ambient`, [
          { apiGroups: [''], resources: ['pods/status'], verbs: ['patch', 'update'] },
          { apiGroups: ['apps'], resources: ['daemonsets'], resourceNames: [`${NAME}-node`], verbs: ['get'] },
        ]),
        binding(`${NAME}-ambient`, `${NAME}-ambient`, repairLabels),
      );
  }
  if (!namespaced) return out;
  const pullSecrets = at(values, 'global.imagePullSecrets') as string[];
  out.push(
    {
      kind: 'ConfigMap',
      apiVersion: 'v1',
      metadata: { name: `${NAME}-config`, namespace, labels },
      data: configMapData(values),
    },
    daemonSet(values, namespace, owned),
    {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      ...(truthy(pullSecrets) ? { imagePullSecrets: pullSecrets.map((name) => ({ name })) } : {}),
      metadata: { name: NAME, namespace, labels },
    },
  );
  if (at(values, 'resourceQuotas.enabled') === true)
    out.push({
      apiVersion: 'v1',
      kind: 'ResourceQuota',
      metadata: {
        name: `${NAME}-resource-quota`,
        namespace,
        labels: { 'app.kubernetes.io/name': NAME, ...istioLabels('cni') },
      },
      spec: {
        hard: { pods: goString(at(values, 'resourceQuotas.pods')) },
        scopeSelector: {
          matchExpressions: [{ operator: 'In', scopeName: 'PriorityClass', values: ['system-node-critical'] }],
        },
      },
    });
  if (at(values, 'global.networkPolicy.enabled') === true) {
    const revision = goString(at(values, 'revision') || '');
    out.push(
      networkPolicy(
        {
          name: revision === '' ? NAME : `${NAME}-${revision}`,
          namespace,
          labels: { 'k8s-app': `${NAME}-node`, ...common },
        },
        { 'k8s-app': `${NAME}-node` },
        [[[CNI_MONITORING_PORT, 'TCP']], [[READINESS_PORT, 'TCP']]],
      ),
    );
  }
  return out;
}
