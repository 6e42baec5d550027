/**
 * What `istioctl waypoint` writes and shows (istio `istioctl/pkg/waypoint/waypoint.go`): the Gateway of a waypoint,
 * and the rows of `list` and `status`.
 */
import { MeshError } from '../lib/errors.js';
import { HBONE_PORT } from '../lib/istio-ports.js';
import { REVISION_LABEL, WAYPOINT_CLASS, WAYPOINT_FOR_LABEL } from '../istiod/model/waypoints.js';

/** constants.DefaultNamespaceWaypoint. */
export const DEFAULT_WAYPOINT_NAME = 'waypoint';
const TRAFFIC_TYPES = ['all', 'none', 'service', 'workload'];

export interface WaypointGateway {
  apiVersion: 'gateway.networking.k8s.io/v1';
  kind: 'Gateway';
  metadata: { name: string; namespace: string; labels?: Record<string, string> };
  spec: {
    gatewayClassName: string;
    listeners: { name: string; port: number; protocol: string }[];
  };
}

/** A Gateway as the list and status read it. */
export interface ListedGateway {
  metadata?: { name?: string; namespace?: string; labels?: Record<string, string> };
  spec?: { gatewayClassName?: string };
  status?: { conditions?: { type?: string; status?: string; reason?: string; message?: string }[] };
}

/**
 * The waypoint Gateway istioctl writes: class istio-waypoint, one HBONE listener `mesh` on 15008; `istio.io/waypoint-for`
 * only when `--for` is given (istiod then defaults to the class's, else service) and `istio.io/rev` with `--revision`.
 */
export function waypointGateway(o: {
  name: string;
  namespace: string;
  for?: string;
  revision?: string;
}): WaypointGateway {
  if (o.name === 'none')
    throw new MeshError('AMESH_ERR_CONFIG', "invalid name provided for waypoint, 'none' is a reserved value");
  const labels: Record<string, string> = {};
  if (o.for !== undefined && o.for !== '') {
    if (!TRAFFIC_TYPES.includes(o.for))
      throw new MeshError(
        'AMESH_ERR_CONFIG',
        `invalid traffic type: ${o.for}. Valid options are: [${TRAFFIC_TYPES.join(' ')}]`,
      );
    labels[WAYPOINT_FOR_LABEL] = o.for;
  }
  if (o.revision !== undefined && o.revision !== '') labels[REVISION_LABEL] = o.revision;
  return {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'Gateway',
    metadata: {
      name: o.name === '' ? DEFAULT_WAYPOINT_NAME : o.name,
      namespace: o.namespace,
      ...(Object.keys(labels).length > 0 ? { labels } : {}),
    },
    spec: {
      gatewayClassName: WAYPOINT_CLASS,
      listeners: [{ name: 'mesh', port: HBONE_PORT, protocol: 'HBONE' }],
    },
  };
}

/** Whether the Gateway's Programmed condition is True. */
export function isProgrammed(gw: ListedGateway): boolean {
  return (gw.status?.conditions ?? []).some((c) => c.type === 'Programmed' && c.status === 'True');
}

/** The waypoints among `gws` (class istio-waypoint), by namespace then name. */
export function waypointsOnly<T extends ListedGateway>(gws: readonly T[]): T[] {
  return gws
    .filter((g) => g.spec?.gatewayClassName === WAYPOINT_CLASS)
    .sort(
      (a, b) =>
        (a.metadata?.namespace ?? '').localeCompare(b.metadata?.namespace ?? '') ||
        (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? ''),
    );
}

/** `waypoint list` rows: NAME, REVISION, TRAFFIC TYPE, PROGRAMMED (NAMESPACE first across namespaces). */
export function listRows(
  gws: readonly ListedGateway[],
  allNamespaces: boolean,
): { headers: string[]; rows: string[][] } {
  const headers = ['NAME', 'REVISION', 'TRAFFIC TYPE', 'PROGRAMMED'];
  const rows = waypointsOnly(gws).map((g) => {
    const labels = g.metadata?.labels ?? {};
    const row = [
      g.metadata?.name ?? '',
      labels[REVISION_LABEL] || 'default',
      labels[WAYPOINT_FOR_LABEL] || 'none',
      isProgrammed(g) ? 'True' : 'False',
    ];
    return allNamespaces ? [g.metadata?.namespace ?? '', ...row] : row;
  });
  return { headers: allNamespaces ? ['NAMESPACE', ...headers] : headers, rows };
}

/** `waypoint status` rows: one per condition, NAME, STATUS, TYPE, REASON, MESSAGE (NAMESPACE first across namespaces). */
export function statusRows(
  gws: readonly ListedGateway[],
  allNamespaces: boolean,
): { headers: string[]; rows: string[][] } {
  const headers = ['NAME', 'STATUS', 'TYPE', 'REASON', 'MESSAGE'];
  const rows = waypointsOnly(gws).flatMap((g) =>
    (g.status?.conditions ?? []).map((c) => {
      const row = [g.metadata?.name ?? '', c.status ?? '', c.type ?? '', c.reason ?? '', c.message ?? ''];
      return allNamespaces ? [g.metadata?.namespace ?? '', ...row] : row;
    }),
  );
  return { headers: allNamespaces ? ['NAMESPACE', ...headers] : headers, rows };
}
