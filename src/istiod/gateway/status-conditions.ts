/**
 * The Gateway API's status conditions as istiod writes them (istio `pilot/pkg/config/kube/gateway/conditions.go`):
 * each with the object's `observedGeneration`, and a `lastTransitionTime` kept while its status stays the same.
 */
export interface Condition {
  readonly type: string;
  readonly status: 'True' | 'False';
  readonly reason: string;
  readonly message: string;
  readonly observedGeneration?: number;
  readonly lastTransitionTime?: string;
}

/** Conditions with `observedGeneration`, keeping each one's transition time while its status stays the same. */
export function withTimes(next: Condition[], prev: readonly Condition[] | undefined, generation: number): Condition[] {
  const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  return next.map((c) => {
    const old = prev?.find((p) => p.type === c.type);
    return {
      ...c,
      observedGeneration: generation,
      lastTransitionTime: old?.status === c.status ? (old.lastTransitionTime ?? now) : now,
    };
  });
}

/** Whether `a` already says what `b` says (times aside): then nothing is written. */
export const sameConditions = (a: readonly Condition[] | undefined, b: readonly Condition[]): boolean =>
  a !== undefined &&
  a.length === b.length &&
  b.every((c) => {
    const o = a.find((x) => x.type === c.type);
    return (
      o !== undefined &&
      o.status === c.status &&
      o.reason === c.reason &&
      o.message === c.message &&
      o.observedGeneration === c.observedGeneration
    );
  });
