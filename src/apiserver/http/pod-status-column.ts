import type { KubeObject } from '../kube-object.js';
import { asRecord } from '../../lib/record.js';

/** The reason kubelet's node lifecycle gives pods of an unreachable node (pkg/util/node `NodeUnreachablePodReason`). */
const NODE_UNREACHABLE = 'NodeLost';

const list = (v: unknown): Record<string, unknown>[] => (Array.isArray(v) ? v.map(asRecord) : []);
const text = (v: unknown): string => (typeof v === 'string' ? v : '');

/** `Signal:9`, `ExitCode:1` or the reason a terminated container's state gives. */
function terminatedReason(t: Record<string, unknown>): string {
  if (text(t.reason) !== '') return text(t.reason);
  return typeof t.signal === 'number' && t.signal !== 0 ? `Signal:${t.signal}` : `ExitCode:${Number(t.exitCode ?? 0)}`;
}

/**
 * The STATUS column of `kubectl get pods`, after k8s.io/kubernetes `pkg/printers/internalversion/printers.go`
 * (`printPod`): the pod's reason or phase, `Init:1/2` (or the failing init container's reason) while init
 * containers run, the first app container's waiting or terminated reason counted from the last, and `Terminating`
 * for a pod being deleted that has not finished.
 */
export function podStatusColumn(o: KubeObject): string {
  const spec = asRecord(o.spec);
  const status = asRecord(o.status);
  const phase = text(status.phase);
  let reason = text(status.reason) !== '' ? text(status.reason) : phase;
  const initCount = Array.isArray(spec.initContainers) ? spec.initContainers.length : 0;
  let initializing = false;
  const inits = list(status.initContainerStatuses);
  for (const [i, c] of inits.entries()) {
    const state = asRecord(c.state);
    const terminated = state.terminated === undefined ? undefined : asRecord(state.terminated);
    const waiting = text(asRecord(state.waiting).reason);
    if (terminated !== undefined && Number(terminated.exitCode ?? 0) === 0) continue;
    initializing = true;
    if (terminated !== undefined) reason = `Init:${terminatedReason(terminated)}`;
    else if (waiting !== '' && waiting !== 'PodInitializing') reason = `Init:${waiting}`;
    else reason = `Init:${i}/${initCount}`;
    break;
  }
  const conditions = list(status.conditions);
  const initialized = conditions.some((c) => c.type === 'Initialized' && c.status === 'True');
  if (!initializing || initialized) {
    let running = false;
    for (const c of list(status.containerStatuses).reverse()) {
      const state = asRecord(c.state);
      const waiting = text(asRecord(state.waiting).reason);
      if (waiting !== '') reason = waiting;
      else if (state.terminated !== undefined) reason = terminatedReason(asRecord(state.terminated));
      else if (c.ready === true && state.running !== undefined) running = true;
    }
    if (reason === 'Completed' && running)
      reason = conditions.some((c) => c.type === 'Ready' && c.status === 'True') ? 'Running' : 'NotReady';
  }
  if (o.metadata.deletionTimestamp !== undefined) {
    if (text(status.reason) === NODE_UNREACHABLE) return 'Unknown';
    if (phase !== 'Succeeded' && phase !== 'Failed') return 'Terminating';
  }
  return reason === '' ? 'Unknown' : reason;
}
