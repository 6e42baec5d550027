import type { KubeObject } from './kube-object.js';
import type { Strategy } from './strategies/strategy.js';
import { kubeTime } from '../lib/kube-time.js';

/**
 * What a DELETE does to an object whose kind deletes gracefully, after k8s.io/apiserver
 * `pkg/registry/rest/delete.go` (`BeforeDelete`) and `pkg/registry/generic/registry/store.go`
 * (`updateForGracefulDeletionAndFinalizers`):
 * - `none`: the kind has no grace period, or the object is marked for deletion without one (finalizers): the
 *   ordinary delete applies;
 * - `pending`: a deletion with at least as short a grace period is already under way: nothing changes;
 * - `graceful`: `obj` is the object marked with `deletionTimestamp` (now + period) and
 *   `deletionGracePeriodSeconds`; a period of 0 removes it at once unless finalizers hold it.
 */
export type GracefulDelete =
  | { readonly kind: 'none' }
  | { readonly kind: 'pending' }
  | { readonly kind: 'graceful'; readonly obj: KubeObject; readonly period: number };

export function beforeDelete(
  strategy: Strategy | undefined,
  current: KubeObject,
  requested: number | undefined,
  nowMs: number = Date.now(),
): GracefulDelete {
  if (strategy?.checkGracefulDelete === undefined) return { kind: 'none' };
  // A negative grace period is taken as 1 s on the delete path.
  const asked = requested !== undefined && requested < 0 ? 1 : requested;
  const meta = current.metadata;
  const marked = structuredClone(current);
  if (meta.deletionTimestamp !== undefined) {
    const before = typeof meta.deletionGracePeriodSeconds === 'number' ? meta.deletionGracePeriodSeconds : undefined;
    if (before === undefined) return { kind: 'none' };
    // Only a shorter grace period may be asked for: the deadline moves back by the difference.
    if (asked === undefined || asked >= before) return { kind: 'pending' };
    const deadline = Date.parse(meta.deletionTimestamp) + (asked - before) * 1000;
    marked.metadata.deletionTimestamp = kubeTime(deadline);
    marked.metadata.deletionGracePeriodSeconds = asked;
    return { kind: 'graceful', obj: marked, period: asked };
  }
  const period = strategy.checkGracefulDelete(current, asked);
  marked.metadata.deletionTimestamp = kubeTime(nowMs + period * 1000);
  marked.metadata.deletionGracePeriodSeconds = period;
  if ((meta.generation ?? 0) > 0) marked.metadata.generation = (meta.generation ?? 0) + 1;
  return { kind: 'graceful', obj: marked, period };
}
