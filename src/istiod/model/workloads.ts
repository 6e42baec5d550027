import { ipBytes } from '../../lib/ip.js';
import { DEFAULT_TRUST_DOMAIN } from '../../lib/spiffe.js';
import type { Manifest } from '../registry/manifest-dir.js';
import { serviceHostname, servicePorts, selects } from './services.js';
import { TunnelProtocol, WorkloadStatus, WorkloadType, type PortModel, type WorkloadModel } from './types.js';

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Obj) : {});

/** The annotation istio-cni sets once a pod's traffic is captured; it is what makes the workload HBONE. */
export const REDIRECTION_ANNOTATION = 'ambient.istio.io/redirection';

export interface WorkloadContext {
  readonly clusterId: string;
  readonly trustDomain: string;
  readonly domainSuffix: string;
  readonly services: readonly Manifest[];
  /** Sorted policy keys that apply to this pod (selector policies, PeerAuthentication keys). */
  readonly authorizationPolicies: readonly string[];
}

function podIps(pod: Manifest): string[] {
  const list = Array.isArray(pod.status['podIPs']) ? pod.status['podIPs'].map((x) => { const ip = obj(x)['ip']; return typeof ip === 'string' ? ip : ''; }) : [];
  const one = typeof pod.status['podIP'] === 'string' ? [pod.status['podIP']] : [];
  return [...new Set([...list, ...one])].filter((ip) => ipBytes(ip) !== undefined);
}

/**
 * The workload a pod belongs to. Istio derives it from the owner (Deployment …); a manifest pod has no owner, so
 * its app label stands in, else its own name.
 */
function workloadName(pod: Manifest): string {
  return pod.metadata.labels['app.kubernetes.io/name'] ?? pod.metadata.labels['app'] ?? pod.metadata.name;
}

function containerPort(pod: Manifest, name: string): number | undefined {
  for (const c of Array.isArray(pod.spec['containers']) ? pod.spec['containers'].map(obj) : []) {
    for (const p of Array.isArray(c['ports']) ? c['ports'].map(obj) : []) {
      if (p['name'] === name && typeof p['containerPort'] === 'number') return p['containerPort'];
    }
  }
  return undefined;
}

function isReady(pod: Manifest): boolean {
  const conds = Array.isArray(pod.status['conditions']) ? pod.status['conditions'].map(obj) : [];
  const ready = conds.find((c) => c['type'] === 'Ready');
  // A manifest with no conditions describes a running pod: treat it as ready (Kubernetes would report Ready).
  return ready === undefined ? true : String(ready['status']) === 'True';
}

/**
 * A Pod → Workload (spec §3.4 `podWorkloadBuilder`). Terminal pods and pods without an IP are skipped.
 */
export function convertPod(pod: Manifest, ctx: WorkloadContext): WorkloadModel | undefined {
  const phase = pod.status['phase'];
  if (phase === 'Succeeded' || phase === 'Failed') return undefined;
  const ips = podIps(pod);
  if (ips.length === 0) return undefined;
  const labels = pod.metadata.labels;
  const services: Record<string, PortModel[]> = {};
  for (const svc of ctx.services) {
    if (svc.metadata.namespace !== pod.metadata.namespace || !selects(svc, labels)) continue;
    const ports = servicePorts(svc).flatMap((p) => {
      const target = p.targetPort === undefined ? p.port : typeof p.targetPort === 'number' ? p.targetPort : containerPort(pod, p.targetPort);
      return target === undefined ? [] : [{ servicePort: p.port, targetPort: target }];
    });
    services[`${svc.metadata.namespace}/${serviceHostname(svc, ctx.domainSuffix)}`] = ports;
  }
  const wname = workloadName(pod);
  return {
    uid: `${ctx.clusterId}//Pod/${pod.metadata.namespace}/${pod.metadata.name}`,
    name: pod.metadata.name,
    namespace: pod.metadata.namespace,
    addresses: ips.map((ip) => new Uint8Array(ipBytes(ip)!)),
    network: '',
    tunnelProtocol: pod.metadata.annotations[REDIRECTION_ANNOTATION] === 'enabled' ? TunnelProtocol.HBONE : TunnelProtocol.NONE,
    trustDomain: ctx.trustDomain === DEFAULT_TRUST_DOMAIN ? '' : ctx.trustDomain,
    serviceAccount: typeof pod.spec['serviceAccountName'] === 'string' ? pod.spec['serviceAccountName'] : 'default',
    node: typeof pod.spec['nodeName'] === 'string' ? pod.spec['nodeName'] : '',
    canonicalName: labels['service.istio.io/canonical-name'] ?? labels['app.kubernetes.io/name'] ?? labels['app'] ?? wname,
    canonicalRevision: labels['service.istio.io/canonical-revision'] ?? labels['app.kubernetes.io/version'] ?? labels['version'] ?? 'latest',
    workloadType: WorkloadType.POD,
    workloadName: wname,
    services,
    authorizationPolicies: ctx.authorizationPolicies,
    status: isReady(pod) ? WorkloadStatus.HEALTHY : WorkloadStatus.UNHEALTHY,
    clusterId: ctx.clusterId,
    networkMode: pod.spec['hostNetwork'] === true ? 1 : 0,
  };
}
