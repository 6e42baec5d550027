/**
 * Whether a pod may run on a node, as kube-scheduler's filter plugins decide it (k8s.io/kubernetes
 * `pkg/scheduler/framework/plugins`: NodeUnschedulable, NodeAffinity, TaintToleration) and the DaemonSet
 * controller reuses them: a cordoned node and a node that is not Ready count as tainted
 * `node.kubernetes.io/unschedulable:NoSchedule` and `node.kubernetes.io/not-ready:NoSchedule` (the node lifecycle
 * controller's taints), so a pod that tolerates them may go there; the pod's `nodeSelector` and required node
 * affinity (`matchExpressions` on labels, `matchFields` on `metadata.name`) must match; and every NoSchedule or
 * NoExecute taint must be tolerated.
 */
import type { V1Node, V1NodeSelectorRequirement, V1PodSpec, V1Taint, V1Toleration } from '@kubernetes/client-node';

export const UNSCHEDULABLE_TAINT = 'node.kubernetes.io/unschedulable';
export const NOT_READY_TAINT = 'node.kubernetes.io/not-ready';

/** A toleration matches a taint by key (or any key, with Exists and no key), value (Equal) and effect (or any). */
export function tolerates(tolerations: readonly V1Toleration[], taint: V1Taint): boolean {
  return tolerations.some((t) => {
    if (t.effect !== undefined && t.effect !== '' && t.effect !== taint.effect) return false;
    if (t.operator === 'Exists') return t.key === undefined || t.key === '' || t.key === taint.key;
    return t.key === taint.key && (t.value ?? '') === (taint.value ?? '');
  });
}

/** One `matchExpressions` or `matchFields` requirement against a value (undefined: the label is absent). */
function requirementHolds(r: V1NodeSelectorRequirement, value: string | undefined): boolean {
  const values = r.values ?? [];
  switch (r.operator) {
    case 'In':
      return value !== undefined && values.includes(value);
    case 'NotIn':
      return value === undefined || !values.includes(value);
    case 'Exists':
      return value !== undefined;
    case 'DoesNotExist':
      return value === undefined;
    case 'Gt':
    case 'Lt': {
      const n = Number(value);
      const bound = Number(values[0]);
      if (value === undefined || !Number.isInteger(n) || !Number.isInteger(bound)) return false;
      return r.operator === 'Gt' ? n > bound : n < bound;
    }
    default:
      return false;
  }
}

/** The pod's `nodeSelector` and required node affinity: one term of the affinity must match, all of its parts. */
function selectorsMatch(spec: V1PodSpec | undefined, node: V1Node): boolean {
  const labels = node.metadata?.labels ?? {};
  if (Object.entries(spec?.nodeSelector ?? {}).some(([k, v]) => labels[k] !== v)) return false;
  const terms = spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
  if (terms === undefined) return true;
  const fields: Readonly<Record<string, string | undefined>> = { 'metadata.name': node.metadata?.name };
  return terms.some(
    (t) =>
      (t.matchExpressions ?? []).every((r) => requirementHolds(r, labels[r.key])) &&
      (t.matchFields ?? []).every((r) => requirementHolds(r, fields[r.key])) &&
      (t.matchExpressions?.length ?? 0) + (t.matchFields?.length ?? 0) > 0,
  );
}

/** The node's taints, with the ones its state implies: cordoned, or not Ready (a node without conditions is). */
function effectiveTaints(node: V1Node): V1Taint[] {
  const taints = [...(node.spec?.taints ?? [])];
  if (node.spec?.unschedulable === true) taints.push({ key: UNSCHEDULABLE_TAINT, effect: 'NoSchedule' });
  const conditions = node.status?.conditions ?? [];
  if (conditions.length > 0 && conditions.find((c) => c.type === 'Ready')?.status !== 'True')
    taints.push({ key: NOT_READY_TAINT, effect: 'NoSchedule' });
  return taints;
}

/** The host ports a pod takes (`hostIP/protocol/port`); a hostNetwork pod's container ports are host ports. */
function hostPorts(spec: V1PodSpec | undefined): string[] {
  const ports = (spec?.containers ?? []).flatMap((c) => c.ports ?? []);
  return ports.flatMap((p) => {
    const port = p.hostPort ?? (spec?.hostNetwork === true ? p.containerPort : undefined);
    return port === undefined || port === 0 ? [] : [`${p.hostIP ?? '0.0.0.0'}/${p.protocol ?? 'TCP'}/${String(port)}`];
  });
}

/** Whether two host ports clash: the same protocol and port, on the same address or on 0.0.0.0 (the NodePorts plugin). */
function clash(a: string, b: string): boolean {
  const [ipA, ...restA] = a.split('/');
  const [ipB, ...restB] = b.split('/');
  return restA.join('/') === restB.join('/') && (ipA === ipB || ipA === '0.0.0.0' || ipB === '0.0.0.0');
}

/**
 * Why `node` cannot run a pod of `spec`, as kube-scheduler words it, or undefined when it can. `onNode` are the
 * specs of the active pods the node runs, whose host ports the pod must not take.
 */
export function unfit(
  node: V1Node,
  spec: V1PodSpec | undefined,
  onNode: readonly (V1PodSpec | undefined)[] = [],
): string | undefined {
  const untolerated = effectiveTaints(node).filter(
    (t) => (t.effect === 'NoSchedule' || t.effect === 'NoExecute') && !tolerates(spec?.tolerations ?? [], t),
  );
  if (untolerated.some((t) => t.key === UNSCHEDULABLE_TAINT)) return 'node(s) were unschedulable';
  if (untolerated.some((t) => t.key === NOT_READY_TAINT)) return 'node(s) were not ready';
  if (!selectorsMatch(spec, node)) return "node(s) didn't match Pod's node affinity/selector";
  if (untolerated.length > 0) return 'node(s) had untolerated taint(s)';
  const wanted = hostPorts(spec);
  if (wanted.length > 0 && onNode.some((other) => hostPorts(other).some((t) => wanted.some((w) => clash(w, t)))))
    return "node(s) didn't have free ports for the requested pod ports";
  return undefined;
}
