/**
 * Server-side printing (`Accept: application/json;as=Table;g=meta.k8s.io;v=v1`), which `kubectl get` asks for:
 * the columns of k8s.io/kubernetes pkg/printers/internalversion/printers.go for built-in kinds, the
 * additionalPrinterColumns of Istio's and the Gateway API's CRDs (a column shows its path's first value, as the CRD
 * table convertor does), and Name/Age for everything else.
 */
import type { KindInfo } from '../kind-info.js';
import type { KubeObject } from '../kube-object.js';
import { asRecord } from '../../lib/record.js';
import { podStatusColumn } from './pod-status-column.js';

interface Column {
  readonly name: string;
  readonly type?: 'string' | 'integer' | 'date';
  readonly priority?: number;
  readonly cell: (o: KubeObject) => string | number;
}

type Obj = Record<string, unknown>;
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
/** A cell's text: a non-empty string, a number, else `dflt` (kubectl's `<none>`). */
function str(v: unknown, dflt = '<none>'): string {
  if (typeof v === 'string' && v !== '') return v;
  return typeof v === 'number' ? String(v) : dflt;
}

/** kubectl's human durations (k8s.io/apimachinery pkg/util/duration HumanDuration). */
export function humanDuration(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 120) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 10) return s % 60 === 0 ? `${m}m` : `${m}m${s % 60}s`;
  if (m < 180) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 8) return m % 60 === 0 ? `${h}h` : `${h}h${m % 60}m`;
  if (h < 48) return `${h}h`;
  const d = Math.floor(h / 24);
  if (h < 192) return h % 24 === 0 ? `${d}d` : `${d}d${h % 24}h`;
  if (d < 365 * 2) return `${d}d`;
  return `${Math.floor(d / 365)}y`;
}

/** An integer status field, 0 when unset (Go's omitempty). */
const count = (v: unknown): number => (typeof v === 'number' ? v : 0);

/** A list cell as kubectl shows EndpointSlices' ports and endpoints: the first three, then how many more, or `<unset>`. */
function firstThree(items: readonly string[]): string {
  if (items.length === 0) return '<unset>';
  const shown = items.slice(0, 3).join(',');
  return items.length > 3 ? `${shown} + ${String(items.length - 3)} more...` : shown;
}

const NAME: Column = { name: 'Name', cell: (o) => o.metadata.name ?? '' };
const AGE: Column = {
  name: 'Age',
  cell: (o) =>
    o.metadata.creationTimestamp === undefined
      ? '<unknown>'
      : humanDuration(Date.now() - Date.parse(o.metadata.creationTimestamp)),
};
const spec = (o: KubeObject): Obj => asRecord(o.spec);
const status = (o: KubeObject): Obj => asRecord(o.status);
/** `.status.conditions[?(@.type=="<type>")].status`, or empty. */
const conditionStatus = (o: KubeObject, type: string): string =>
  str(asRecord(arr(status(o).conditions).find((c) => asRecord(c).type === type)).status, '');

function podReady(o: KubeObject): string {
  const containers = arr(spec(o).containers).length;
  const ready = arr(status(o).containerStatuses).filter((c) => asRecord(c).ready === true).length;
  return `${ready}/${containers}`;
}

/**
 * A Service's EXTERNAL-IP as printers.go's `getServiceExternalIP` writes it: its externalIPs, and for a
 * LoadBalancer its ingress addresses after them (`<pending>` while it has none); an ExternalName's name.
 */
function serviceExternalIp(o: KubeObject): string {
  const external = arr(spec(o).externalIPs).map((x) => str(x, ''));
  switch (spec(o).type) {
    case 'ExternalName':
      return str(spec(o).externalName, '');
    case 'LoadBalancer': {
      const ingress = arr(asRecord(status(o).loadBalancer).ingress).map((i) =>
        str(asRecord(i).ip, str(asRecord(i).hostname, '')),
      );
      const all = [...external, ...ingress].filter((x) => x !== '');
      return all.length > 0 ? all.join(',') : '<pending>';
    }
    default:
      return external.length > 0 ? external.join(',') : '<none>';
  }
}

function servicePorts(o: KubeObject): string {
  const ports = arr(spec(o).ports).map((p) => {
    const q = asRecord(p);
    const node = typeof q.nodePort === 'number' ? `:${q.nodePort}` : '';
    return `${str(q.port, '')}${node}/${str(q.protocol, 'TCP')}`;
  });
  return ports.length > 0 ? ports.join(',') : '<none>';
}

/** `True` or `False`, as printers.go's printBool writes a bool. */
const goBool = (v: unknown): string => (v === true ? 'True' : 'False');

/** A Job's state as kubectl shows it, the first of its conditions that holds in printers.go's order. */
function jobStatus(o: KubeObject): string {
  const holds = (type: string): boolean =>
    arr(status(o).conditions).some((c) => asRecord(c).type === type && asRecord(c).status === 'True');
  if (holds('Complete')) return 'Complete';
  if (holds('Failed')) return 'Failed';
  if (o.metadata.deletionTimestamp !== undefined) return 'Terminating';
  if (holds('Suspended')) return 'Suspended';
  if (holds('FailureTarget')) return 'FailureTarget';
  if (holds('SuccessCriteriaMet')) return 'SuccessCriteriaMet';
  return 'Running';
}

/** `succeeded/completions`, or without completions `succeeded/1`, `of <parallelism>` when that is above 1. */
function jobCompletions(o: KubeObject): string {
  const succeeded = count(status(o).succeeded);
  if (typeof spec(o).completions === 'number') return `${succeeded}/${spec(o).completions as number}`;
  const parallelism = count(spec(o).parallelism);
  return parallelism > 1 ? `${succeeded}/1 of ${parallelism}` : `${succeeded}/1`;
}

/** A role's CREATED AT: its creation time in RFC 3339, as printers.go prints roles. */
const CREATED_AT: Column = {
  name: 'Created At',
  type: 'date',
  cell: (o) => o.metadata.creationTimestamp ?? '',
};

/** A binding's subjects of one kind, joined as printers.go joins `rbac.SubjectsStrings` (a ServiceAccount as ns/name). */
function subjectsOf(kind: string): (o: KubeObject) => string {
  return (o) =>
    arr(o.subjects)
      .map(asRecord)
      .filter((s) => s.kind === kind)
      .map((s) => (kind === 'ServiceAccount' ? `${str(s.namespace, '')}/${str(s.name, '')}` : str(s.name, '')))
      .join(', ');
}

const BINDING_COLUMNS: Column[] = [
  NAME,
  { name: 'Role', cell: (o) => `${str(asRecord(o.roleRef).kind, '')}/${str(asRecord(o.roleRef).name, '')}` },
  AGE,
  { name: 'Users', priority: 1, cell: subjectsOf('User') },
  { name: 'Groups', priority: 1, cell: subjectsOf('Group') },
  { name: 'ServiceAccounts', priority: 1, cell: subjectsOf('ServiceAccount') },
];

/** HTTPRoute's and GRPCRoute's, as their CRDs' printer columns say: `.spec.hostnames` (a JSON list), and age. */
const ROUTE_COLUMNS: Column[] = [
  NAME,
  {
    name: 'Hostnames',
    cell: (o) => (arr(spec(o).hostnames).length > 0 ? JSON.stringify(arr(spec(o).hostnames)) : ''),
  },
  AGE,
];

/** An IntOrString as Go prints it, `N/A` when unset (printers.go's PodDisruptionBudget columns). */
const intOrPercent = (v: unknown): string => (typeof v === 'number' || typeof v === 'string' ? String(v) : 'N/A');

/**
 * An HPA's TARGETS as printers.go's `formatHPAMetrics` writes it: per metric `current/target` (current
 * `<unknown>` until a controller reports it; a resource's `cpu: `, an average `(avg)`), the first two, then how
 * many more.
 */
function hpaTargets(o: KubeObject): string {
  const metrics = arr(spec(o).metrics).map(asRecord);
  if (metrics.length === 0) return '<none>';
  const current = arr(status(o).currentMetrics).map(asRecord);
  const cells = metrics.map((m, i) => {
    const type = str(m.type, '');
    const field = {
      Resource: 'resource',
      ContainerResource: 'containerResource',
      Pods: 'pods',
      Object: 'object',
      External: 'external',
    }[type];
    if (field === undefined) return '<unknown type>';
    const source = asRecord(m[field]);
    const target = asRecord(source.target);
    const now = asRecord(asRecord(current[i]?.[field]).current);
    const quantity = (v: unknown): string => str(v, '<unknown>');
    if (type === 'Resource' || type === 'ContainerResource') {
      const name = str(source.name, '');
      if (target.averageValue !== undefined)
        return `${name}: ${quantity(now.averageValue)}/${str(target.averageValue, '')}`;
      const used = typeof now.averageUtilization === 'number' ? `${now.averageUtilization}%` : '<unknown>';
      const wanted = typeof target.averageUtilization === 'number' ? `${target.averageUtilization}%` : '<auto>';
      return `${name}: ${used}/${wanted}`;
    }
    if (type === 'Pods') return `${quantity(now.averageValue)}/${str(target.averageValue, '')}`;
    if (target.averageValue !== undefined) return `${quantity(now.averageValue)}/${str(target.averageValue, '')} (avg)`;
    return `${quantity(now.value)}/${str(target.value, '')}`;
  });
  return cells.length > 2 ? `${cells.slice(0, 2).join(', ')} + ${cells.length - 2} more...` : cells.join(', ');
}

const COLUMNS: Record<string, Column[]> = {
  '/Pod': [
    NAME,
    { name: 'Ready', cell: podReady },
    { name: 'Status', cell: podStatusColumn },
    {
      name: 'Restarts',
      type: 'integer',
      cell: (o) =>
        arr(status(o).containerStatuses).reduce<number>(
          (n, c) => n + (typeof asRecord(c).restartCount === 'number' ? (asRecord(c).restartCount as number) : 0),
          0,
        ),
    },
    AGE,
    { name: 'IP', priority: 1, cell: (o) => str(status(o).podIP) },
    { name: 'Node', priority: 1, cell: (o) => str(spec(o).nodeName) },
  ],
  '/Service': [
    NAME,
    { name: 'Type', cell: (o) => str(spec(o).type, 'ClusterIP') },
    { name: 'Cluster-IP', cell: (o) => str(spec(o).clusterIP) },
    { name: 'External-IP', cell: serviceExternalIp },
    { name: 'Port(s)', cell: servicePorts },
    AGE,
    {
      name: 'Selector',
      priority: 1,
      cell: (o) =>
        Object.entries(asRecord(spec(o).selector))
          .map(([k, v]) => `${k}=${str(v, '')}`)
          .join(',') || '<none>',
    },
  ],
  '/Namespace': [NAME, { name: 'Status', cell: (o) => str(status(o).phase, 'Active') }, AGE],
  '/Node': [
    NAME,
    {
      name: 'Status',
      cell: (o) =>
        arr(status(o).conditions).some((c) => asRecord(c).type === 'Ready' && asRecord(c).status === 'True')
          ? 'Ready'
          : 'NotReady',
    },
    {
      name: 'Roles',
      cell: (o) =>
        Object.keys(o.metadata.labels ?? {})
          .filter((l) => l.startsWith('node-role.kubernetes.io/'))
          .map((l) => l.slice('node-role.kubernetes.io/'.length))
          .join(',') || '<none>',
    },
    AGE,
    { name: 'Version', cell: (o) => str(asRecord(status(o).nodeInfo).kubeletVersion, '') },
  ],
  '/ConfigMap': [
    NAME,
    {
      name: 'Data',
      type: 'integer',
      cell: (o) => Object.keys(asRecord(o.data)).length + Object.keys(asRecord(o.binaryData)).length,
    },
    AGE,
  ],
  '/Secret': [
    NAME,
    { name: 'Type', cell: (o) => str(o.type, 'Opaque') },
    { name: 'Data', type: 'integer', cell: (o) => Object.keys(asRecord(o.data)).length },
    AGE,
  ],
  'apps/Deployment': [
    NAME,
    { name: 'Ready', cell: (o) => `${str(status(o).readyReplicas, '0')}/${str(spec(o).replicas, '1')}` },
    {
      name: 'Up-to-date',
      type: 'integer',
      cell: (o) => (typeof status(o).updatedReplicas === 'number' ? (status(o).updatedReplicas as number) : 0),
    },
    {
      name: 'Available',
      type: 'integer',
      cell: (o) => (typeof status(o).availableReplicas === 'number' ? (status(o).availableReplicas as number) : 0),
    },
    AGE,
  ],
  'apps/DaemonSet': [
    NAME,
    ...(
      [
        'desiredNumberScheduled',
        'currentNumberScheduled',
        'numberReady',
        'updatedNumberScheduled',
        'numberAvailable',
      ] as const
    ).map((f, i): Column => ({
      name: ['Desired', 'Current', 'Ready', 'Up-to-date', 'Available'][i]!,
      type: 'integer',
      cell: (o) => count(status(o)[f]),
    })),
    {
      name: 'Node Selector',
      cell: (o) =>
        str(
          Object.entries(asRecord(asRecord(asRecord(spec(o).template).spec).nodeSelector))
            .map(([k, v]) => `${k}=${String(v)}`)
            .join(','),
        ),
    },
    AGE,
  ],
  'apps/StatefulSet': [
    NAME,
    { name: 'Ready', cell: (o) => `${count(status(o).readyReplicas)}/${str(spec(o).replicas, '1')}` },
    AGE,
  ],
  'apps/ControllerRevision': [
    NAME,
    {
      name: 'Controller',
      cell: (o) => {
        const owner = (o.metadata.ownerReferences ?? []).find((r) => r.controller === true);
        if (owner === undefined) return '<none>';
        const group = owner.apiVersion.includes('/') ? `.${owner.apiVersion.split('/')[0]!}` : '';
        return `${owner.kind.toLowerCase()}${group}/${owner.name}`;
      },
    },
    { name: 'Revision', type: 'integer', cell: (o) => count(o.revision) },
    AGE,
  ],
  'batch/Job': [
    NAME,
    { name: 'Status', cell: jobStatus },
    { name: 'Completions', cell: jobCompletions },
    {
      name: 'Duration',
      cell: (o) => {
        const start = Date.parse(str(status(o).startTime, ''));
        if (Number.isNaN(start)) return '';
        const end = Date.parse(str(status(o).completionTime, ''));
        return humanDuration((Number.isNaN(end) ? Date.now() : end) - start);
      },
    },
    AGE,
  ],
  'batch/CronJob': [
    NAME,
    { name: 'Schedule', cell: (o) => str(spec(o).schedule, '') },
    { name: 'Timezone', cell: (o) => str(spec(o).timeZone) },
    { name: 'Suspend', cell: (o) => (typeof spec(o).suspend === 'boolean' ? goBool(spec(o).suspend) : '<unset>') },
    { name: 'Active', type: 'integer', cell: (o) => arr(status(o).active).length },
    {
      name: 'Last Schedule',
      cell: (o) => {
        const last = Date.parse(str(status(o).lastScheduleTime, ''));
        return Number.isNaN(last) ? '<none>' : humanDuration(Date.now() - last);
      },
    },
    AGE,
  ],
  'coordination.k8s.io/Lease': [NAME, { name: 'Holder', cell: (o) => str(spec(o).holderIdentity, '') }, AGE],
  'admissionregistration.k8s.io/ValidatingWebhookConfiguration': [
    NAME,
    { name: 'Webhooks', type: 'integer', cell: (o) => arr(o.webhooks).length },
    AGE,
  ],
  'admissionregistration.k8s.io/MutatingWebhookConfiguration': [
    NAME,
    { name: 'Webhooks', type: 'integer', cell: (o) => arr(o.webhooks).length },
    AGE,
  ],
  'discovery.k8s.io/EndpointSlice': [
    NAME,
    { name: 'AddressType', cell: (o) => str(o.addressType, '') },
    {
      name: 'Ports',
      cell: (o) => firstThree(arr(o.ports).map((p) => str(asRecord(p).port, str(asRecord(p).name, '*')))),
    },
    {
      name: 'Endpoints',
      cell: (o) => firstThree(arr(o.endpoints).flatMap((e) => arr(asRecord(e).addresses).map((a) => str(a, '')))),
    },
    AGE,
  ],
  'policy/PodDisruptionBudget': [
    NAME,
    { name: 'Min Available', cell: (o) => intOrPercent(spec(o).minAvailable) },
    { name: 'Max Unavailable', cell: (o) => intOrPercent(spec(o).maxUnavailable) },
    { name: 'Allowed Disruptions', type: 'integer', cell: (o) => count(status(o).disruptionsAllowed) },
    AGE,
  ],
  'autoscaling/HorizontalPodAutoscaler': [
    NAME,
    {
      name: 'Reference',
      cell: (o) =>
        `${str(asRecord(spec(o).scaleTargetRef).kind, '')}/${str(asRecord(spec(o).scaleTargetRef).name, '')}`,
    },
    { name: 'Targets', cell: hpaTargets },
    { name: 'MinPods', cell: (o) => str(spec(o).minReplicas, '<unset>') },
    { name: 'MaxPods', type: 'integer', cell: (o) => count(spec(o).maxReplicas) },
    { name: 'Replicas', type: 'integer', cell: (o) => count(status(o).currentReplicas) },
    AGE,
  ],
  'rbac.authorization.k8s.io/ClusterRole': [NAME, CREATED_AT],
  'rbac.authorization.k8s.io/Role': [NAME, CREATED_AT],
  'rbac.authorization.k8s.io/ClusterRoleBinding': BINDING_COLUMNS,
  'rbac.authorization.k8s.io/RoleBinding': BINDING_COLUMNS,
  'security.istio.io/AuthorizationPolicy': [NAME, { name: 'Action', cell: (o) => str(spec(o).action, '') }, AGE],
  'security.istio.io/PeerAuthentication': [
    NAME,
    { name: 'Mode', cell: (o) => str(asRecord(spec(o).mtls).mode, '') },
    AGE,
  ],
  'gateway.networking.k8s.io/GatewayClass': [
    NAME,
    { name: 'Controller', cell: (o) => str(spec(o).controllerName, '') },
    { name: 'Accepted', cell: (o) => conditionStatus(o, 'Accepted') },
    AGE,
  ],
  'gateway.networking.k8s.io/Gateway': [
    NAME,
    { name: 'Class', cell: (o) => str(spec(o).gatewayClassName, '') },
    { name: 'Address', cell: (o) => str(asRecord(arr(status(o).addresses)[0]).value, '') },
    { name: 'Programmed', cell: (o) => conditionStatus(o, 'Programmed') },
    AGE,
  ],
  'gateway.networking.k8s.io/HTTPRoute': ROUTE_COLUMNS,
  'gateway.networking.k8s.io/GRPCRoute': ROUTE_COLUMNS,
  'networking.istio.io/ServiceEntry': [
    NAME,
    { name: 'Hosts', cell: (o) => JSON.stringify(arr(spec(o).hosts)) },
    { name: 'Location', cell: (o) => str(spec(o).location, '') },
    { name: 'Resolution', cell: (o) => str(spec(o).resolution, '') },
    AGE,
  ],
};

export type IncludeObject = 'None' | 'Metadata' | 'Object';

/** Whether an Accept header asks for a meta.k8s.io Table (kubectl get's first choice). */
export function wantsTable(accept: string | undefined): boolean {
  if (accept === undefined) return false;
  const first = accept.split(',')[0] ?? '';
  return /;\s*as=Table/.test(first) && /;\s*g=meta\.k8s\.io/.test(first);
}

export function toTable(
  k: KindInfo,
  items: readonly KubeObject[],
  resourceVersion: string,
  include: IncludeObject,
): unknown {
  const cols = COLUMNS[`${k.group}/${k.kind}`] ?? [NAME, AGE];
  return {
    kind: 'Table',
    apiVersion: 'meta.k8s.io/v1',
    metadata: { resourceVersion },
    columnDefinitions: cols.map((c) => ({
      name: c.name,
      type: c.type ?? 'string',
      format: c === NAME ? 'name' : '',
      description: '',
      priority: c.priority ?? 0,
    })),
    rows: items.map((o) => ({
      cells: cols.map((c) => c.cell(o)),
      ...(include === 'None'
        ? {}
        : {
            object:
              include === 'Object'
                ? o
                : { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: o.metadata },
          }),
    })),
  };
}
