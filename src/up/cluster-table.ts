import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { render, type OutputFormat } from '../lib/table.js';
import type { ClusterSnapshot } from './cluster.js';

/** A node as `amesh up` lists it. */
function nodeRow(n: V1Node): { name: string; status: string; internalIP: string; podCIDR: string } {
  const ready = n.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
  return {
    name: n.metadata?.name ?? '',
    status: ready ? 'Ready' : 'NotReady',
    internalIP: n.status?.addresses?.find((a) => a.type === 'InternalIP')?.address ?? '',
    podCIDR: n.spec?.podCIDR ?? '',
  };
}

/** A pod with kubectl get pods -o wide's READY, STATUS and RESTARTS. */
function podRow(p: V1Pod): {
  namespace: string;
  name: string;
  ready: string;
  status: string;
  restarts: number;
  ip: string;
  node: string;
} {
  const statuses = p.status?.containerStatuses ?? [];
  const waiting = statuses
    .map((s) => s.state?.waiting?.reason)
    .find((r) => r !== undefined && r !== 'ContainerCreating');
  return {
    namespace: p.metadata?.namespace ?? '',
    name: p.metadata?.name ?? '',
    ready: `${String(statuses.filter((s) => s.ready).length)}/${String(p.spec?.containers.length ?? 0)}`,
    status:
      waiting ??
      (p.status?.phase === 'Pending' && p.spec?.nodeName !== undefined && p.status.podIP === undefined
        ? 'ContainerCreating'
        : (p.status?.phase ?? 'Unknown')),
    restarts: statuses.reduce((n, s) => n + s.restartCount, 0),
    ip: p.status?.podIP ?? '',
    node: p.spec?.nodeName ?? '',
  };
}

/** The nodes and pods `amesh up` shows once the cluster is up: two tables, or one JSON/YAML document. */
export function clusterTable(s: ClusterSnapshot, format: OutputFormat): string {
  const nodes = s.nodes.map(nodeRow);
  const pods = s.pods
    .map(podRow)
    .sort((a, b) => a.namespace.localeCompare(b.namespace) || a.name.localeCompare(b.name));
  if (format !== 'table') return render(format, [], [], { nodes, pods });
  return (
    render(
      'table',
      ['NODE', 'STATUS', 'INTERNAL-IP', 'POD-CIDR'],
      nodes.map((n) => [n.name, n.status, n.internalIP, n.podCIDR]),
      undefined,
    ) +
    '\n' +
    render(
      'table',
      ['NAMESPACE', 'NAME', 'READY', 'STATUS', 'RESTARTS', 'IP', 'NODE'],
      pods.map((p) => [p.namespace, p.name, p.ready, p.status, String(p.restarts), p.ip, p.node]),
      undefined,
    )
  );
}
