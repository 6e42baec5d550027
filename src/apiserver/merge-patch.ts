/**
 * `application/merge-patch+json` (RFC 7386) as the API server applies it: k8s.io/apiserver
 * pkg/endpoints/handlers/patch.go applyJSPatch with gopkg.in/evanphx/json-patch.v4 (merge.go MergePatch). As
 * there, a null member deletes, objects merge recursively, anything else replaces; null members are pruned from
 * objects the patch adds (also inside arrays the patch adds where nothing stood before), and a patch that is
 * null or a scalar is `400 BadRequest` "Invalid JSON Patch". An array patch replaces the document, which then
 * fails to decode as an object (`422 Invalid`), as upstream.
 */
import { ApiError } from './api-error.js';
import type { KubeObject } from './kube-object.js';
import { patchResultNotAnObject } from './patch-errors.js';
import { isRecord } from '../lib/record.js';

type JsonMap = Record<string, unknown>;

/** ErrBadJSONPatch. */
const BAD_PATCH = 'Invalid JSON Patch';

function pruneNulls(v: unknown): void {
  if (isRecord(v)) pruneDocNulls(v);
  else if (Array.isArray(v)) for (const x of v) if (x !== null) pruneNulls(x);
}

function pruneDocNulls(doc: JsonMap): void {
  for (const [k, v] of Object.entries(doc)) {
    if (v === null) Reflect.deleteProperty(doc, k);
    else pruneNulls(v);
  }
}

function mergeValue(cur: unknown, patch: unknown): unknown {
  if (!isRecord(cur)) {
    pruneNulls(patch);
    return patch;
  }
  if (!isRecord(patch)) return patch;
  mergeDocs(cur, patch);
  return cur;
}

function mergeDocs(doc: JsonMap, patch: JsonMap): void {
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) {
      Reflect.deleteProperty(doc, k);
    } else if (!Object.hasOwn(doc, k) || doc[k] === null) {
      pruneNulls(v);
      doc[k] = v;
    } else {
      doc[k] = mergeValue(doc[k], v);
    }
  }
}

/** Applies an RFC 7386 merge patch (`patch` is the decoded request body) to `doc`, never changing either input. */
export function applyMergePatch(doc: KubeObject, patch: unknown): KubeObject {
  if (Array.isArray(patch)) {
    const replaced = structuredClone(patch);
    pruneNulls(replaced);
    throw patchResultNotAnObject(replaced);
  }
  if (!isRecord(patch)) throw new ApiError('BadRequest', BAD_PATCH);
  const result = structuredClone(doc) as JsonMap;
  mergeDocs(result, structuredClone(patch));
  return result as KubeObject;
}
