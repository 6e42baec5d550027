/**
 * `application/json-patch+json` (RFC 6902) as the API server applies it: k8s.io/apiserver
 * pkg/endpoints/handlers/patch.go applyJSPatch with gopkg.in/evanphx/json-patch.v4 (patch.go). We keep v4's
 * behaviour where it departs from the RFC, because clients see it: negative array indices count from the end,
 * `replace` of a missing object member adds it, `copy` from a missing member copies null, `add` without `value`
 * adds null, the whole document can be replaced or tested but not added to or removed, and a path without its
 * leading `/` has its first segment ignored.
 *
 * Errors as upstream serves them: a patch that is not a list of operations is `400 BadRequest` with Go's json
 * message; more than 10,000 operations is `413`; an operation that fails (a failed `test` included) is the
 * generic `422 Invalid` "the server rejected our request due to an error in our request" without details, as
 * the API server wraps evanphx's error; that error stays on the ApiError as `cause` for our logs.
 */
import { ApiError } from './api-error.js';
import { goJsonKind } from './go-format.js';
import type { KubeObject } from './kube-object.js';
import { patchNotApplicable, patchResultNotAnObject } from './patch-errors.js';
import { isRecord } from '../lib/record.js';

/** maxJSONPatchOperations in patch.go. */
const MAX_JSON_PATCH_OPERATIONS = 10_000;

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type JsonObject = Record<string, Json>;
type Container = JsonObject | Json[];

/** One operation as decoded: any JSON object (`Operation` is a map of raw messages upstream). */
type Operation = Readonly<Record<string, unknown>> | null;

class OperationError extends Error {}

/** jsonpatch.DecodePatch: a JSON array of objects (null elements pass and fail later as an unknown kind). */
function decodePatch(patch: unknown): Operation[] {
  if (patch === null) return [];
  if (!Array.isArray(patch))
    throw new ApiError(
      'BadRequest',
      `json: cannot unmarshal ${goJsonKind(patch)} into Go value of type jsonpatch.Patch`,
    );
  for (const op of patch) {
    if (op !== null && !isRecord(op))
      throw new ApiError(
        'BadRequest',
        `json: cannot unmarshal ${goJsonKind(op)} into Go value of type jsonpatch.Operation`,
      );
  }
  return patch as Operation[];
}

// --- JSON pointers and containers ---------------------------------------------------------------------------

/** RFC 6901 unescaping: `~1` to `/` first, then `~0` to `~`. */
const decodePatchKey = (k: string): string => k.replaceAll('~1', '/').replaceAll('~0', '~');

/** strconv.Atoi: optional sign and decimal digits within int64; anything else is a syntax error. */
function atoi(key: string): number {
  if (!/^[+-]?[0-9]+$/.test(key))
    throw new OperationError(`strconv.Atoi: parsing ${JSON.stringify(key)}: invalid syntax`);
  const n = Number(key);
  if (!Number.isSafeInteger(n))
    throw new OperationError(`strconv.Atoi: parsing ${JSON.stringify(key)}: value out of range`);
  return n;
}

const invalidIndex = (idx: number): OperationError =>
  new OperationError(`Unable to access invalid index: ${idx}: invalid index referenced`);

/** An index into an array of `length` items; negative counts from the end (SupportNegativeIndices). */
function arrayIndex(key: string, length: number): number {
  let idx = atoi(key);
  if (idx < 0) {
    if (idx < -length) throw invalidIndex(idx);
    idx += length;
  }
  if (idx >= length) throw invalidIndex(idx);
  return idx;
}

/** The member `key` of a container: undefined for a missing object member, an error for a bad array index. */
function get(c: Container, key: string): Json | undefined {
  if (Array.isArray(c)) return c[arrayIndex(key, c.length)];
  return Object.hasOwn(c, key) ? c[key] : undefined;
}

function add(c: Container, key: string, value: Json): void {
  if (!Array.isArray(c)) {
    c[key] = value;
    return;
  }
  if (key === '-') {
    c.push(value);
    return;
  }
  let idx: number;
  try {
    idx = atoi(key);
  } catch (e) {
    throw new OperationError(`value was not a proper array index: '${key}': ${(e as Error).message}`);
  }
  const size = c.length + 1;
  if (idx >= size) throw invalidIndex(idx);
  if (idx < 0) {
    if (idx < -size) throw invalidIndex(idx);
    idx += size;
  }
  c.splice(idx, 0, value);
}

function remove(c: Container, key: string): void {
  if (!Array.isArray(c)) {
    if (!Object.hasOwn(c, key)) throw new OperationError(`Unable to remove nonexistent key: ${key}: missing value`);
    Reflect.deleteProperty(c, key);
    return;
  }
  c.splice(arrayIndex(key, c.length), 1);
}

function set(c: Container, key: string, value: Json): void {
  if (Array.isArray(c)) c[arrayIndex(key, c.length)] = value;
  else c[key] = value;
}

/** findObject: the container holding the last segment of `path`, and that segment, or undefined. */
function findObject(doc: Container, path: string): [Container, string] | undefined {
  const split = path.split('/');
  if (split.length < 2) return undefined;
  let c: Container = doc;
  for (const part of split.slice(1, -1)) {
    let next: Json | undefined;
    try {
      next = get(c, decodePatchKey(part));
    } catch {
      return undefined;
    }
    if (next === undefined || next === null || typeof next !== 'object') return undefined;
    c = next;
  }
  return [c, decodePatchKey(split[split.length - 1]!)];
}

// --- operations -----------------------------------------------------------------------------------------------

function stringField(op: Operation, field: 'path' | 'from', what: string): string {
  const v = op?.[field];
  if (typeof v !== 'string') throw new OperationError(`${what} operation failed to decode ${field}: missing value`);
  return v;
}

/** The operation's value: null when absent, as v4 adds a nil node. */
const valueOf = (op: Operation): Json => (op !== null && Object.hasOwn(op, 'value') ? (op.value as Json) : null);

function locate(doc: Container, path: string, message: string): [Container, string] {
  const found = findObject(doc, path);
  if (found === undefined) throw new OperationError(message);
  return found;
}

function deepEqual(a: Json, b: Json): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => deepEqual(x, b[i]!));
  }
  const ka = Object.keys(a);
  return ka.length === Object.keys(b).length && ka.every((k) => Object.hasOwn(b, k) && deepEqual(a[k]!, b[k]!));
}

/** Applies one operation; returns the document (a `replace` of "" replaces it whole). */
function applyOperation(doc: Container, op: Operation): Container {
  const kind = typeof op?.op === 'string' ? op.op : 'unknown';
  switch (kind) {
    case 'add': {
      const path = stringField(op, 'path', 'add');
      const [c, key] = locate(doc, path, `add operation does not apply: doc is missing path: "${path}": missing value`);
      wrap(`error in add for path: '${path}'`, () => add(c, key, structuredClone(valueOf(op))));
      return doc;
    }
    case 'remove': {
      const path = stringField(op, 'path', 'remove');
      const [c, key] = locate(
        doc,
        path,
        `remove operation does not apply: doc is missing path: "${path}": missing value`,
      );
      wrap(`error in remove for path: '${path}'`, () => remove(c, key));
      return doc;
    }
    case 'replace': {
      const path = stringField(op, 'path', 'replace');
      const value = structuredClone(valueOf(op));
      if (path === '') {
        if (typeof value !== 'object' || value === null)
          throw new OperationError('replace operation value must be object or array');
        return value;
      }
      const [c, key] = locate(
        doc,
        path,
        `replace operation does not apply: doc is missing path: ${path}: missing value`,
      );
      try {
        get(c, key);
      } catch {
        throw new OperationError(`replace operation does not apply: doc is missing key: ${path}: missing value`);
      }
      set(c, key, value);
      return doc;
    }
    case 'move': {
      const from = stringField(op, 'from', 'move');
      const [fc, fkey] = locate(
        doc,
        from,
        `move operation does not apply: doc is missing from path: ${from}: missing value`,
      );
      const value = wrap(`error in move for path: '${fkey}'`, () => {
        const v = get(fc, fkey);
        remove(fc, fkey);
        return v;
      });
      const path = stringField(op, 'path', 'move');
      const [c, key] = locate(
        doc,
        path,
        `move operation does not apply: doc is missing destination path: ${path}: missing value`,
      );
      wrap(`error in move for path: '${path}'`, () => add(c, key, value ?? null));
      return doc;
    }
    case 'test': {
      const path = stringField(op, 'path', 'test');
      const failed = new OperationError(`testing value ${path} failed: test failed`);
      if (path === '') {
        if (!deepEqual(doc, valueOf(op))) throw failed;
        return doc;
      }
      const [c, key] = locate(doc, path, `test operation does not apply: is missing path: ${path}: missing value`);
      const actual = wrap(`error in test for path: '${path}'`, () => get(c, key));
      if (actual === undefined || actual === null) {
        if (valueOf(op) !== null) throw failed;
      } else if (op === null || !Object.hasOwn(op, 'value') || !deepEqual(actual, valueOf(op))) {
        throw failed;
      }
      return doc;
    }
    case 'copy': {
      const from = stringField(op, 'from', 'copy');
      const [fc, fkey] = locate(
        doc,
        from,
        `copy operation does not apply: doc is missing from path: ${from}: missing value`,
      );
      const value = wrap(`error in copy for from: '${from}'`, () => get(fc, fkey));
      const path = stringField(op, 'path', 'copy');
      const [c, key] = locate(
        doc,
        path,
        `copy operation does not apply: doc is missing destination path: ${path}: missing value`,
      );
      wrap('error while adding value during copy', () => add(c, key, structuredClone(value ?? null)));
      return doc;
    }
    default:
      throw new OperationError(`Unexpected kind: ${kind}`);
  }
}

function wrap<T>(prefix: string, fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    if (e instanceof OperationError) throw new OperationError(`${prefix}: ${e.message}`);
    throw e;
  }
}

/**
 * Applies an RFC 6902 patch (`patch` is the decoded request body) to `doc`, never changing either input.
 * Errors are ApiErrors with the API server's reasons and wording.
 */
export function applyJsonPatch(doc: KubeObject, patch: unknown): KubeObject {
  const ops = decodePatch(patch);
  if (ops.length > MAX_JSON_PATCH_OPERATIONS) {
    throw new ApiError(
      'RequestEntityTooLarge',
      `Request entity too large: The allowed maximum operations in a JSON patch is ${MAX_JSON_PATCH_OPERATIONS}, got ${ops.length}`,
    );
  }
  let result: Container = structuredClone(doc) as unknown as JsonObject;
  for (const op of ops) {
    try {
      result = applyOperation(result, op);
    } catch (e) {
      if (e instanceof OperationError) throw patchNotApplicable(e);
      throw e;
    }
  }
  if (!isRecord(result)) throw patchResultNotAnObject(result);
  return result as unknown as KubeObject;
}
