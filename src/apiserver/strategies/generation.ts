import { isDeepStrictEqual } from 'node:util';
import type { Strategy } from './strategy.js';
import type { KubeObject } from '../kube-object.js';

/**
 * `metadata.generation` and `status` across writes of the main resource, as the strategies of k8s.io/kubernetes
 * `pkg/registry/*` keep them: a create starts at generation 1 with the kind's initial status; an update keeps the
 * stored status (only the `status` subresource changes it) and counts one generation per change of what the
 * kind tracks (its spec, and for some kinds more), otherwise keeps the stored generation.
 */

export function startGeneration(obj: KubeObject, status: unknown): void {
  obj.metadata.generation = 1;
  setStatus(obj, status);
}

/** What a kind's generation counts changes of: the spec for most kinds. */
export type Tracked = (obj: KubeObject) => unknown;

const SPEC: Tracked = (o) => o.spec;

/** Carries status over from `old` and bumps generation when what the kind tracks changed. */
export function nextGeneration(obj: KubeObject, old: KubeObject, tracked: Tracked = SPEC): void {
  const changed = !isDeepStrictEqual(tracked(obj), tracked(old));
  setStatus(obj, old.status);
  const before = old.metadata.generation ?? 0;
  obj.metadata.generation = changed ? before + 1 : before;
}

/** Carries status over from `old` unchanged (kinds that do not track generation). */
export function keepStatus(obj: KubeObject, old: KubeObject): void {
  setStatus(obj, old.status);
}

function setStatus(obj: KubeObject, status: unknown): void {
  if (status === undefined) delete obj.status;
  else obj.status = structuredClone(status);
}

/** The create and update hooks of a kind whose decode-time defaults apply to both and whose generation is tracked. */
export function generationHooks(
  applyDefaults: (obj: KubeObject) => void,
  initialStatus: unknown,
  tracked: Tracked = SPEC,
): Required<Pick<Strategy, 'prepareForCreate' | 'prepareForUpdate'>> {
  return {
    prepareForCreate(obj) {
      applyDefaults(obj);
      startGeneration(obj, structuredClone(initialStatus));
    },
    prepareForUpdate(obj, old) {
      applyDefaults(obj);
      nextGeneration(obj, old, tracked);
    },
  };
}
