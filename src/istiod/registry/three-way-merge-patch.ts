/**
 * The JSON merge patch (RFC 7386) that takes a live object to what was applied, as `kubectl apply` computes it
 * for kinds without strategic-merge metadata (k8s.io/apimachinery pkg/util/jsonmergepatch
 * CreateThreeWayJSONMergePatch): fields that differ from the live object are set, fields that were applied last
 * time and are no longer in the manifest are removed (null), and fields that someone else added (a defaulted
 * `spec.clusterIP`, a controller's annotation) are left alone. Lists are replaced whole, as merge patch does,
 * but only when the manifest's list changed since the last apply: the server fills defaults into list items
 * (a container's `terminationMessagePath`), which a strategic merge would keep and a whole-list compare with the
 * live object would fight on every apply.
 * Written by hand because it is a few lines over plain JSON; the strategic variant lives in the API server.
 */
import { asRecord, isRecord } from '../../lib/record.js';

type Json = unknown;
type JsonObject = Record<string, Json>;

function equal(a: Json, b: Json): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => equal(x, b[i]));
  if (isRecord(a) && isRecord(b)) {
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => Object.hasOwn(b, k) && equal(a[k], b[k]));
  }
  return false;
}

/** The patch from `current` to `modified`, deleting what `original` (the last applied version) had and `modified` lacks. */
export function threeWayMergePatch(original: Json, modified: JsonObject, current: Json): JsonObject {
  const patch: JsonObject = {};
  const cur = asRecord(current);
  const orig = asRecord(original);
  for (const [k, m] of Object.entries(modified)) {
    const c = cur[k];
    if (isRecord(m) && isRecord(c)) {
      const sub = threeWayMergePatch(orig[k], m, c);
      if (Object.keys(sub).length > 0) patch[k] = sub;
    } else if (!equal(m, c) && !(Array.isArray(m) && equal(m, orig[k]))) {
      patch[k] = m;
    }
  }
  for (const k of Object.keys(orig)) if (!Object.hasOwn(modified, k) && Object.hasOwn(cur, k)) patch[k] = null;
  return patch;
}
