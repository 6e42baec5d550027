/**
 * The per-node daemons of an ambient cluster, run as Istio's DaemonSets run them: the node agent
 * (`istio-cni-node-<node>`, `amesh cni-agent`, hostNetwork, service account `istio-cni`, Ready by /readyz on
 * 8000) with its run directory (pluginevent.sock, istio-cni-kubeconfig) and ZDS socket under the node's data dir,
 * and a `ztunnel-<node>` pod in istio-system on every node (`app: ztunnel`, service account `ztunnel`, `hostNetwork: true`, so the node's
 * kubelet runs it in the node's namespace, restarts it when it exits and reports it Ready by its readiness port),
 * with Istio's env for reaching istiod (XDS_ADDRESS, CA_ADDRESS, the root certificate, ALT_*_HOSTNAME for the
 * name on istiod's certificate, which is dialled by IP here). There is no DaemonSet controller: `up` creates one
 * pod per node itself, as a DaemonSet controller would.
 *
 * The tokens, each from the API's TokenRequest, bound to the daemon's pod as the kubelet's projected tokens are,
 * written atomically and renewed at 80% of their lifetime, as the kubelet renews them:
 * - ztunnel's istio-ca token: istiod with --kubeconfig authenticates ztunnel by TokenReview and authorizes its
 *   impersonation by the pod the token is bound to (istio security/pkg/server/ca/node_auth.go); it is written to
 *   the file AUTH_TOKEN names.
 * - the agent's API token, for `istio-system/istio-cni` and the API's own audiences, as a pod's kube-api-access
 *   token is: the agent reaches the API as Istio's istio-cni-node DaemonSet does, with the istio-cni ClusterRoles
 *   (src/up/istio-rbac.ts, applied by up before the daemons start), never with up's admin credentials. Its kubeconfig names the token by
 *   `tokenFile`, which the agent rereads, and the agent writes the token into the plugin's kubeconfig.
 */
import { mkdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { CoreV1Api, type KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { ameshCommand } from './amesh-command.js';
import { tokenFileKubeconfig } from '../kube/kube-config.js';
import { ignoreConflict } from '../kube/kube-status.js';
import { requestToken } from '../kube/request-token.js';
import { MeshError, describeError } from '../lib/errors.js';
import { ZTUNNEL_READINESS_PORT } from '../lib/istio-ports.js';
import type { Logger } from '../lib/log.js';
import type { NodeRecord, UpDataDir } from './up-data-dir.js';
import { packageRoot } from '../lib/package-root.js';

/** Istio's system namespace and ztunnel's service account and audience (manifests/charts/ztunnel). */
const SYSTEM_NAMESPACE = 'istio-system';
const ZTUNNEL_SERVICE_ACCOUNT = 'ztunnel';
const CA_AUDIENCE = 'istio-ca';
const AGENT_SERVICE_ACCOUNT = 'istio-cni';
/** The agent's readiness server (Istio cni/pkg/constants ReadinessPort, the chart's readinessProbe). */
const AGENT_READINESS = { port: 8000, path: '/readyz' } as const;
/** The name on istiod's serving certificate (istiod/config.ts istiodServingNames), verified when dialled by IP. */
const ISTIOD_HOSTNAME = 'istiod.istio-system.svc';
/** Lifetime of the daemons' tokens; the kubelet's projected-token default (expirationSeconds) is one hour. */
const TOKEN_TTL_SECONDS = 3600;
/** The kubelet renews a projected token once 80% of its lifetime has passed. */
const TOKEN_RENEW_FRACTION = 0.8;
/** A token that could not be renewed is asked for again this soon. */
const TOKEN_RETRY_MS = 5_000;
/** ztunnel's readiness probe (the chart's readinessProbe). */
const ZTUNNEL_READINESS = { port: ZTUNNEL_READINESS_PORT, path: '/healthz/ready' } as const;
/** Probed every second, so `up` shows the table as soon as ztunnel has its config. */
const READINESS_PERIOD_SECONDS = 1;

export interface NodeDaemonsOptions {
  readonly kc: KubeConfig;
  readonly dataDir: UpDataDir;
  readonly nodes: readonly NodeRecord[];
  /** istiod's address as the nodes reach it (`https://host:port`). */
  readonly istiodAddress: string;
  /** istiod's root certificate, the trust anchor for xDS and the CA. */
  readonly rootCertPath: string;
  readonly log: Logger;
}

export const ztunnelPodName = (node: string): string => `ztunnel-${node}`;
export const agentPodName = (node: string): string => `istio-cni-node-${node}`;

/** Where a node's agent keeps pluginevent.sock and istio-cni-kubeconfig (amesh-cni's cni_agent_run_dir). */
export const agentRunDir = (dataDir: UpDataDir, node: string): string => path.join(dataDir.nodeDir(node), 'cni-agent');
/** The agent's kubeconfig and its service-account token, as the pod's kube-api-access volume would hold it. */
const agentCredentialsDir = (dataDir: UpDataDir, node: string): string => path.join(dataDir.nodeDir(node), 'istio-cni');
/** The node's ZDS socket, shared by its agent and its ztunnel (Istio's /var/run/ztunnel/ztunnel.sock hostPath). */
const zdsSocket = (dataDir: UpDataDir, node: string): string => path.join(dataDir.nodeDir(node), 'ztunnel.sock');

/** The downward-API env Istio's charts give both daemons. */
const FIELD_ENV = [
  { name: 'NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
  { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
  { name: 'POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
  { name: 'INSTANCE_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
  { name: 'SERVICE_ACCOUNT', valueFrom: { fieldRef: { fieldPath: 'spec.serviceAccountName' } } },
];

interface DaemonPodSpec {
  readonly name: string;
  readonly node: string;
  readonly labels: Record<string, string>;
  readonly serviceAccount: string;
  readonly container: string;
  /** `amesh` arguments. */
  readonly amesh: readonly string[];
  readonly env: Record<string, string>;
  readonly probe: { readonly port: number; readonly path: string };
  /** The capabilities Istio's chart adds for it (after dropping all). */
  readonly capabilities: readonly string[];
  /** Host paths it mounts at the same path, as the chart's hostPath volumes. */
  readonly hostPaths?: readonly { name: string; path: string; type: string; propagation?: string }[];
}

/** A DaemonSet-like pod on one node: in the node's namespace, running `amesh <args>`, Ready by its HTTP probe. */
function daemonPod({
  name,
  node,
  labels,
  serviceAccount,
  container,
  amesh,
  env,
  probe,
  capabilities,
  hostPaths = [],
}: DaemonPodSpec): V1Pod {
  const { cmd, args } = ameshCommand();
  return {
    metadata: { name, namespace: SYSTEM_NAMESPACE, labels },
    spec: {
      nodeName: node,
      hostNetwork: true,
      // The cluster's DNS as their nameserver, as Istio's ztunnel pod (not hostNetwork upstream) and istio-cni-node
      // (ClusterFirstWithHostNet in its chart) have it: what ztunnel's DNS proxy does not answer goes to kube-dns.
      dnsPolicy: 'ClusterFirstWithHostNet',
      serviceAccountName: serviceAccount,
      terminationGracePeriodSeconds: 30,
      volumes: hostPaths.map((h) => ({ name: h.name, hostPath: { path: h.path, type: h.type } })),
      containers: [
        {
          name: container,
          image: 'amesh',
          command: [cmd, ...args, ...amesh],
          // amesh's own checkout: where Node resolves what `amesh` imports at start (tsx, when it runs from source).
          workingDir: packageRoot(),
          env: [...Object.entries(env).map(([n, value]) => ({ name: n, value })), ...FIELD_ENV],
          readinessProbe: { httpGet: { path: probe.path, port: probe.port }, periodSeconds: READINESS_PERIOD_SECONDS },
          // The charts' capabilities. Unlike the ztunnel chart (runAsGroup 1337, readOnlyRootFilesystem), the
          // daemons write their sockets, kubeconfigs and tokens under the data dir on the host's filesystem rather
          // than into hostPath volumes, so they keep root's group and a writable root here.
          securityContext: {
            privileged: false,
            runAsUser: 0,
            runAsGroup: 0,
            capabilities: { drop: ['ALL'], add: [...capabilities] },
          },
          volumeMounts: hostPaths.map((h) => ({
            name: h.name,
            mountPath: h.path,
            ...(h.propagation === undefined ? {} : { mountPropagation: h.propagation }),
          })),
        },
      ],
    },
  };
}

/** The node's ztunnel pod, as the ztunnel DaemonSet's template would make it (in-pod mode, on the node's ZDS socket). */
function ztunnelPod(node: NodeRecord, o: NodeDaemonsOptions, tokenFile: string): V1Pod {
  const env = {
    XDS_ADDRESS: o.istiodAddress,
    CA_ADDRESS: o.istiodAddress,
    ALT_XDS_HOSTNAME: ISTIOD_HOSTNAME,
    ALT_CA_HOSTNAME: ISTIOD_HOSTNAME,
    XDS_ROOT_CA: o.rootCertPath,
    CA_ROOT_CA: o.rootCertPath,
    AUTH_TOKEN: tokenFile,
    INPOD_ENABLED: 'true',
    INPOD_UDS: zdsSocket(o.dataDir, node.name),
  };
  return daemonPod({
    name: ztunnelPodName(node.name),
    node: node.name,
    labels: { app: 'ztunnel' },
    serviceAccount: ZTUNNEL_SERVICE_ACCOUNT,
    container: 'istio-proxy',
    amesh: ['ztunnel'],
    env,
    probe: ZTUNNEL_READINESS,
    capabilities: ['NET_ADMIN', 'SYS_ADMIN', 'NET_RAW'],
  });
}

/** The node's agent pod, as the istio-cni-node DaemonSet's would be; it reaches the API as istio-cni. */
function agentPod(node: NodeRecord, o: NodeDaemonsOptions, kubeconfig: string): V1Pod {
  const args = [
    'cni-agent',
    '--kubeconfig',
    kubeconfig,
    '--cni-agent-run-dir',
    agentRunDir(o.dataDir, node.name),
    '--ztunnel-uds-address',
    zdsSocket(o.dataDir, node.name),
  ];
  return daemonPod({
    name: agentPodName(node.name),
    node: node.name,
    labels: { 'k8s-app': 'istio-cni-node' },
    serviceAccount: AGENT_SERVICE_ACCOUNT,
    container: 'install-cni',
    amesh: args,
    // `up` writes each node's network config with the plugin chained (cluster.ts), and its kubelets run the plugin
    // from the checkout's bin/.
    env: { CNI_ENABLE_INSTALL: 'false' },
    probe: AGENT_READINESS,
    capabilities: ['NET_ADMIN', 'NET_RAW', 'SYS_PTRACE', 'SYS_ADMIN', 'DAC_OVERRIDE'],
    hostPaths: [
      // The pods' network namespaces, which appear after the agent started (the chart's cni-netns-dir).
      { name: 'cni-netns-dir', path: '/run/netns', type: 'DirectoryOrCreate', propagation: 'HostToContainer' },
      // iptables' lock, shared with kube-proxy, which writes the same node's tables.
      { name: 'xtables-lock', path: '/run/xtables.lock', type: 'FileOrCreate' },
    ],
  });
}

/** A token the kubelet would project into a daemon's pod: for its service account, bound to the pod. */
interface PodToken {
  readonly node: string;
  readonly serviceAccount: string;
  readonly pod: string;
  /** Absent: the API's own audiences. */
  readonly audience?: string;
  readonly file: string;
}

export class NodeDaemons {
  private readonly timers = new Set<NodeJS.Timeout>();
  private stopped = false;

  private constructor(private readonly o: NodeDaemonsOptions) {}

  /** Creates istio-system, the daemons' service accounts and each node's daemon pods, and keeps their tokens fresh. */
  static async start(o: NodeDaemonsOptions): Promise<NodeDaemons> {
    const core = o.kc.makeApiClient(CoreV1Api);
    const cluster = o.kc.getCurrentCluster();
    if (cluster === null) throw new MeshError('AMESH_ERR_CONFIG', "up's kubeconfig has no current cluster");
    await core.createNamespace({ body: { metadata: { name: SYSTEM_NAMESPACE } } }).catch(ignoreConflict);
    for (const sa of [AGENT_SERVICE_ACCOUNT, ZTUNNEL_SERVICE_ACCOUNT])
      await core
        .createNamespacedServiceAccount({
          namespace: SYSTEM_NAMESPACE,
          body: { metadata: { name: sa, namespace: SYSTEM_NAMESPACE } },
        })
        .catch(ignoreConflict);
    const d = new NodeDaemons(o);
    for (const node of o.nodes) {
      const ztunnelDir = path.join(o.dataDir.nodeDir(node.name), 'ztunnel');
      const agentDir = agentCredentialsDir(o.dataDir, node.name);
      for (const dir of [ztunnelDir, agentDir, agentRunDir(o.dataDir, node.name)])
        await mkdir(dir, { recursive: true, mode: 0o700 });
      const agentToken = path.join(agentDir, 'token');
      const agentKubeconfig = path.join(agentDir, 'kubeconfig');
      await writeFile(agentKubeconfig, tokenFileKubeconfig(cluster, AGENT_SERVICE_ACCOUNT, agentToken), {
        mode: 0o600,
      });
      await core
        .createNamespacedPod({ namespace: SYSTEM_NAMESPACE, body: agentPod(node, o, agentKubeconfig) })
        .catch(ignoreConflict);
      await d.renewToken({
        node: node.name,
        serviceAccount: AGENT_SERVICE_ACCOUNT,
        pod: agentPodName(node.name),
        file: agentToken,
      });
      const ztunnelToken = path.join(ztunnelDir, 'istio-token');
      await core
        .createNamespacedPod({ namespace: SYSTEM_NAMESPACE, body: ztunnelPod(node, o, ztunnelToken) })
        .catch(ignoreConflict);
      await d.renewToken({
        node: node.name,
        serviceAccount: ZTUNNEL_SERVICE_ACCOUNT,
        pod: ztunnelPodName(node.name),
        audience: CA_AUDIENCE,
        file: ztunnelToken,
      });
    }
    return d;
  }

  /** Writes a fresh token bound to the daemon's pod (atomically: the daemon may read it at any time), and schedules the next. */
  private async renewToken(t: PodToken): Promise<void> {
    let next = TOKEN_TTL_SECONDS * 1000 * TOKEN_RENEW_FRACTION;
    try {
      const token = await requestToken(this.o.kc, {
        namespace: SYSTEM_NAMESPACE,
        serviceAccount: t.serviceAccount,
        pod: t.pod,
        audience: t.audience,
        ttlSeconds: TOKEN_TTL_SECONDS,
      });
      await writeFile(`${t.file}.tmp`, token, { mode: 0o600 });
      await rename(`${t.file}.tmp`, t.file);
    } catch (e) {
      next = TOKEN_RETRY_MS;
      this.o.log.error(
        { node: t.node, pod: t.pod, error: describeError(e), retryInMs: next },
        `cannot renew the ${t.serviceAccount} service-account token`,
      );
    }
    if (this.stopped) return;
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      void this.renewToken(t);
    }, next);
    this.timers.add(timer);
  }

  /** Stops renewing tokens; the pods go with their kubelets. */
  stop(): Promise<void> {
    this.stopped = true;
    for (const t of this.timers) clearTimeout(t);
    return Promise.resolve();
  }
}
