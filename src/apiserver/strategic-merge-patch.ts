/**
 * `application/strategic-merge-patch+json` as the API server applies it (k8s.io/apimachinery
 * pkg/util/strategicpatch/patch.go StrategicMergeMapPatch, with the server-side options MergeParallelList and
 * IgnoreUnmatchedNulls), and the status codes k8s.io/apiserver pkg/endpoints/handlers/patch.go
 * interpretStrategicMergePatchError gives its errors.
 *
 * Upstream reads `patchStrategy`/`patchMergeKey` from the Go struct tags of the kind's type. We carry those tags
 * as a table ({@link SCHEMAS}, copied from k8s.io/api core/v1, apps/v1, batch/v1, policy/v1, autoscaling/v1 and
 * v2, rbac/v1 and k8s.io/apimachinery meta/v1
 * types.go): a field listed with `merge` merges lists by its merge key (or as a set of scalars); every other list
 * is replaced whole; maps always merge. `retainKeys` needs no table entry: the server honours `$retainKeys`
 * wherever a patch carries it. Directives: `$patch: replace|delete` (and `merge`, refused as upstream refuses it),
 * `$deleteFromPrimitiveList/<field>`, `$setElementOrder/<field>` (order: `$setElementOrder` over the patch over
 * the live list), `$retainKeys`.
 *
 * Upstream decodes the merged map into the kind's Go type, which drops unknown fields (every `$`-key a patch left
 * behind) and null fields. Our store is untyped, so values taken whole from the patch get the same treatment
 * ({@link asDecoded}). Custom resources (Istio, Gateway API) have no Go type and refuse this patch type with
 * `415 UnsupportedMediaType`, as apiextensions-apiserver does.
 */
import { ApiError } from './api-error.js';
import { goJsonKind, goTypeOf, goValue, type GoType } from './go-format.js';
import type { KindInfo } from './kind-info.js';
import type { KubeObject } from './kube-object.js';
import { patchNotApplicable } from './patch-errors.js';
import { isRecord } from '../lib/record.js';

/** The patch tags of one field: `merge` lists and, for lists of maps, the merge key. */
interface FieldTags {
  readonly merge?: boolean;
  readonly mergeKey?: string;
  /** The fields of the field's type (the element type for lists) that carry tags themselves. */
  readonly fields?: Schema;
}
type Schema = Readonly<Record<string, FieldTags>>;

const merge = (mergeKey?: string, fields?: Schema): FieldTags => ({
  merge: true,
  ...(mergeKey !== undefined ? { mergeKey } : {}),
  ...(fields !== undefined ? { fields } : {}),
});
const struct = (fields: Schema): FieldTags => ({ fields });

const OBJECT_META: Schema = { finalizers: merge(), ownerReferences: merge('uid') };
const CONTAINER: Schema = {
  ports: merge('containerPort'),
  env: merge('name'),
  volumeMounts: merge('mountPath'),
  volumeDevices: merge('devicePath'),
};
const POD_SPEC: Schema = {
  volumes: merge('name'),
  initContainers: merge('name', CONTAINER),
  containers: merge('name', CONTAINER),
  ephemeralContainers: merge('name', CONTAINER),
  imagePullSecrets: merge('name'),
  hostAliases: merge('ip'),
  topologySpreadConstraints: merge('topologyKey'),
  schedulingGates: merge('name'),
  resourceClaims: merge('name'),
};
const POD_TEMPLATE_SPEC: Schema = { metadata: struct(OBJECT_META), spec: struct(POD_SPEC) };
const CONDITIONS_STATUS: Schema = { conditions: merge('type') };
const JOB_SPEC: Schema = { template: struct(POD_TEMPLATE_SPEC) };
const metaOnly = (more: Schema = {}): Schema => ({ metadata: struct(OBJECT_META), ...more });

/** The tagged fields of every built-in kind, by `group/Kind`. */
const SCHEMAS: ReadonlyMap<string, Schema> = new Map<string, Schema>([
  ['/Namespace', metaOnly({ status: struct(CONDITIONS_STATUS) })],
  [
    '/Pod',
    metaOnly({
      spec: struct(POD_SPEC),
      status: struct({
        conditions: merge('type'),
        hostIPs: merge('ip'),
        podIPs: merge('ip'),
        resourceClaimStatuses: merge('name'),
      }),
    }),
  ],
  ['/Service', metaOnly({ spec: struct({ ports: merge('port') }), status: struct(CONDITIONS_STATUS) })],
  [
    '/Node',
    metaOnly({
      spec: struct({ podCIDRs: merge() }),
      status: struct({ conditions: merge('type'), addresses: merge('type') }),
    }),
  ],
  ['/ServiceAccount', metaOnly({ secrets: merge('name') })],
  ['/Secret', metaOnly()],
  ['/ConfigMap', metaOnly()],
  ['/Event', metaOnly()],
  [
    'apps/Deployment',
    metaOnly({ spec: struct({ template: struct(POD_TEMPLATE_SPEC) }), status: struct(CONDITIONS_STATUS) }),
  ],
  [
    'apps/ReplicaSet',
    metaOnly({ spec: struct({ template: struct(POD_TEMPLATE_SPEC) }), status: struct(CONDITIONS_STATUS) }),
  ],
  [
    'apps/DaemonSet',
    metaOnly({ spec: struct({ template: struct(POD_TEMPLATE_SPEC) }), status: struct(CONDITIONS_STATUS) }),
  ],
  [
    'apps/StatefulSet',
    metaOnly({ spec: struct({ template: struct(POD_TEMPLATE_SPEC) }), status: struct(CONDITIONS_STATUS) }),
  ],
  ['apps/ControllerRevision', metaOnly()],
  ['coordination.k8s.io/Lease', metaOnly()],
  ['admissionregistration.k8s.io/ValidatingWebhookConfiguration', metaOnly({ webhooks: merge('name') })],
  ['admissionregistration.k8s.io/MutatingWebhookConfiguration', metaOnly({ webhooks: merge('name') })],
  ['batch/Job', metaOnly({ spec: struct(JOB_SPEC), status: struct(CONDITIONS_STATUS) })],
  ['batch/CronJob', metaOnly({ spec: struct({ jobTemplate: struct(metaOnly({ spec: struct(JOB_SPEC) })) }) })],
  ['discovery.k8s.io/EndpointSlice', metaOnly()],
  ['authentication.k8s.io/TokenReview', metaOnly()],
  ['autoscaling/Scale', metaOnly()],
  ['autoscaling/HorizontalPodAutoscaler', metaOnly({ status: struct(CONDITIONS_STATUS) })],
  ['policy/PodDisruptionBudget', metaOnly({ status: struct(CONDITIONS_STATUS) })],
  ['rbac.authorization.k8s.io/ClusterRole', metaOnly()],
  ['rbac.authorization.k8s.io/ClusterRoleBinding', metaOnly()],
  ['rbac.authorization.k8s.io/Role', metaOnly()],
  ['rbac.authorization.k8s.io/RoleBinding', metaOnly()],
  ['authorization.k8s.io/SubjectAccessReview', metaOnly()],
]);

const schemaKey = (kind: KindInfo): string => `${kind.group}/${kind.kind}`;

/** Whether the kind is built in (has Go types upstream) and so accepts strategic merge patch. */
export function supportsStrategicMergePatch(kind: KindInfo): boolean {
  return SCHEMAS.has(schemaKey(kind));
}

// --- errors (k8s.io/apimachinery pkg/util/mergepatch errors.go) ----------------------------------------------

/** How interpretStrategicMergePatchError serves an error: 400, 422, or (any other error) 500. */
type Disposition = 'badRequest' | 'invalid' | 'internal';

class PatchError extends Error {
  constructor(
    message: string,
    readonly disposition: Disposition = 'internal',
  ) {
    super(message);
  }
}

const errNoListOfLists = (): PatchError => new PatchError('lists of lists are not supported', 'invalid');
const errBadPatchFormatForPrimitiveList = (): PatchError =>
  new PatchError('invalid patch format of primitive list', 'badRequest');
const errBadPatchFormatForRetainKeys = (): PatchError =>
  new PatchError('invalid patch format of retainKeys', 'badRequest');
const errBadPatchFormatForSetElementOrderList = (): PatchError =>
  new PatchError('invalid patch format of setElementOrder list', 'badRequest');
const errNoMergeKey = (m: unknown, key: string): PatchError =>
  new PatchError(`map: ${goValue(m)} does not contain declared merge key: ${key}`);
const errBadArgType = (expected: GoType, actual: unknown): PatchError =>
  new PatchError(`expected a ${expected}, but received a ${goTypeOf(actual)}`);
const errBadPatchType = (t: unknown, m: JsonMap): PatchError =>
  new PatchError(
    `unknown patch type: ${typeof t === 'string' ? t : `%!s(${goTypeOf(t)}=${goValue(t)})`} in map: ${goValue(m)}`,
  );

function toApiError(e: PatchError): ApiError {
  switch (e.disposition) {
    case 'badRequest':
      return new ApiError('BadRequest', e.message);
    case 'invalid':
      return patchNotApplicable(e);
    case 'internal':
      return new ApiError('InternalError', e.message);
  }
}

// --- values ---------------------------------------------------------------------------------------------------

type JsonMap = Record<string, unknown>;

const DIRECTIVE_MARKER = '$patch';
const RETAIN_KEYS_DIRECTIVE = '$retainKeys';
const DELETE_FROM_PRIMITIVE_LIST_PREFIX = '$deleteFromPrimitiveList';
const SET_ELEMENT_ORDER_PREFIX = '$setElementOrder';

/** What decoding into a Go type keeps of a value taken whole from the patch: no `$` keys, no null fields. */
function asDecoded(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(asDecoded);
  if (!isRecord(v)) return v;
  const out: JsonMap = {};
  for (const [k, x] of Object.entries(v)) if (!k.startsWith('$') && x !== null) out[k] = asDecoded(x);
  return out;
}

/** A merge key value (or a scalar) as Go compares `interface{}` values: nil for null, absent, or not a map. */
function keyValue(item: unknown, mergeKey: string, isMapKind: boolean): unknown {
  if (!isMapKind) return item;
  return isRecord(item) ? (item[mergeKey] ?? undefined) : undefined;
}

function indexIn(list: readonly unknown[], item: unknown, mergeKey: string, isMapKind: boolean): number {
  const wanted = keyValue(item, mergeKey, isMapKind);
  return list.findIndex((v) => keyValue(v, mergeKey, isMapKind) === wanted);
}

function findMapByKeyValue(list: readonly unknown[], key: string, value: unknown): number {
  for (let i = 0; i < list.length; i++) {
    const v = list[i];
    if (!isRecord(v)) throw new PatchError(`value for key ${i} is not a map.`);
    if (Object.hasOwn(v, key) && v[key] === value) return i;
  }
  return -1;
}

/** The one Go type all elements of the lists share; lists of lists and mixed lists are refused. */
function sliceElementType(...lists: readonly (readonly unknown[])[]): GoType {
  let prev: GoType | undefined;
  for (const list of lists) {
    for (const v of list) {
      const t = goTypeOf(v);
      if (prev === undefined) {
        if (t === '[]interface {}') throw errNoListOfLists();
        prev = t;
      } else if (prev !== t) {
        throw new PatchError(`list element types are not identical: ${goValue(lists)}`);
      }
    }
  }
  if (prev === undefined) throw new PatchError('no elements in any of the given slices');
  return prev;
}

/** deduplicateScalars: drops repeats by moving the last element into their place (order as upstream leaves it). */
function deduplicateScalars(s: unknown[]): unknown[] {
  let length = s.length - 1;
  for (let i = 0; i < length; i++) {
    for (let j = i + 1; j <= length; j++) {
      if (s[i] === s[j]) {
        s[j] = s[length];
        s.length = length;
        length--;
        j--;
      }
    }
  }
  return s;
}

/**
 * Go's sort.SliceStable (insertion sort in blocks of 20, then SymMerge), with a `less` that may be inconsistent
 * as upstream's is for elements missing from the order list: the same algorithm gives the same order.
 */
function goSliceStable<T>(data: T[], less: (a: T, b: T) => boolean): void {
  const lessAt = (i: number, j: number): boolean => less(data[i]!, data[j]!);
  const swap = (i: number, j: number): void => {
    const t = data[i]!;
    data[i] = data[j]!;
    data[j] = t;
  };
  const insertionSort = (a: number, b: number): void => {
    for (let i = a + 1; i < b; i++) for (let j = i; j > a && lessAt(j, j - 1); j--) swap(j, j - 1);
  };
  const swapRange = (a: number, b: number, n: number): void => {
    for (let i = 0; i < n; i++) swap(a + i, b + i);
  };
  const rotate = (a: number, m: number, b: number): void => {
    let i = m - a;
    let j = b - m;
    while (i !== j) {
      if (i > j) {
        swapRange(m - i, m, j);
        i -= j;
      } else {
        swapRange(m - i, m + j - i, i);
        j -= i;
      }
    }
    swapRange(m - i, m, i);
  };
  const symMerge = (a: number, m: number, b: number): void => {
    if (m - a === 1) {
      let i = m;
      let j = b;
      while (i < j) {
        const h = (i + j) >>> 1;
        if (lessAt(h, a)) i = h + 1;
        else j = h;
      }
      for (let k = a; k < i - 1; k++) swap(k, k + 1);
      return;
    }
    if (b - m === 1) {
      let i = a;
      let j = m;
      while (i < j) {
        const h = (i + j) >>> 1;
        if (!lessAt(m, h)) i = h + 1;
        else j = h;
      }
      for (let k = m; k > i; k--) swap(k, k - 1);
      return;
    }
    const mid = (a + b) >>> 1;
    const n = mid + m;
    let start: number;
    let r: number;
    if (m > mid) {
      start = n - b;
      r = mid;
    } else {
      start = a;
      r = m;
    }
    const p = n - 1;
    while (start < r) {
      const c = (start + r) >>> 1;
      if (!lessAt(p - c, c)) start = c + 1;
      else r = c;
    }
    const end = n - start;
    if (start < m && m < end) rotate(start, m, end);
    if (a < start && start < mid) symMerge(a, start, mid);
    if (mid < end && end < b) symMerge(mid, end, b);
  };
  const n = data.length;
  let blockSize = 20;
  let a = 0;
  let b = blockSize;
  while (b <= n) {
    insertionSort(a, b);
    a = b;
    b += blockSize;
  }
  insertionSort(a, n);
  while (blockSize < n) {
    a = 0;
    b = 2 * blockSize;
    while (b <= n) {
      symMerge(a, a + blockSize, b);
      a = b;
      b += 2 * blockSize;
    }
    const m = a + blockSize;
    if (m < n) symMerge(a, m, n);
    blockSize *= 2;
  }
}

// --- list ordering ----------------------------------------------------------------------------------------------

function validateMergeKeyInLists(mergeKey: string, ...lists: readonly (readonly unknown[])[]): void {
  for (const list of lists) {
    for (const item of list) {
      if (!isRecord(item)) throw errBadArgType('map[string]interface {}', item);
      if (!Object.hasOwn(item, mergeKey)) throw errNoMergeKey(item, mergeKey);
    }
  }
}

/** Splits a list of maps into the items to keep and those marked `$patch: delete`. */
function extractToDeleteItems(list: readonly unknown[]): [unknown[], unknown[]] {
  const keep: unknown[] = [];
  const toDelete: unknown[] = [];
  for (const v of list) {
    if (!isRecord(v)) throw errBadArgType('map[string]interface {}', v);
    (v[DIRECTIVE_MARKER] === 'delete' ? toDelete : keep).push(v);
  }
  return [keep, toDelete];
}

/** Sorts `toSort` by the position of each item in `order`; deletion markers go last. */
function normalizeSliceOrder(toSort: unknown[], order: readonly unknown[], mergeKey: string, kind: GoType): unknown[] {
  const isMapKind = kind === 'map[string]interface {}';
  let sorted = toSort;
  let toDelete: unknown[] = [];
  if (isMapKind) {
    validateMergeKeyInLists(mergeKey, toSort, order);
    [sorted, toDelete] = extractToDeleteItems(toSort);
  }
  goSliceStable(sorted, (x, y) => {
    const ix = indexIn(order, x, mergeKey, isMapKind);
    const iy = ix >= 0 ? indexIn(order, y, mergeKey, isMapKind) : -1;
    return ix >= 0 && iy >= 0 ? ix < iy : true;
  });
  return [...sorted, ...toDelete];
}

/** Interleaves server-only items into the patch items, keeping each list's order and the live order where known. */
function mergeSortedSlice(
  left: readonly unknown[],
  right: readonly unknown[],
  serverOrder: readonly unknown[],
  mergeKey: string,
  kind: GoType,
): unknown[] {
  const isMapKind = kind === 'map[string]interface {}';
  const out: unknown[] = [];
  let i = 0;
  let j = 0;
  while (i < left.length || j < right.length) {
    if (i >= left.length) out.push(right[j++]);
    else if (j >= right.length) out.push(left[i++]);
    else {
      const li = indexIn(serverOrder, left[i], mergeKey, isMapKind);
      const ri = indexIn(serverOrder, right[j], mergeKey, isMapKind);
      if (li >= 0 && ri >= 0 && li < ri) out.push(left[i++]);
      else out.push(right[j++]);
    }
  }
  return out;
}

function normalizeElementOrder(
  patch: unknown[],
  serverOnly: unknown[],
  patchOrder: readonly unknown[],
  serverOrder: readonly unknown[],
  mergeKey: string,
  kind: GoType,
): unknown[] {
  const sortedPatch = normalizeSliceOrder(patch, patchOrder, mergeKey, kind);
  const sortedServerOnly = normalizeSliceOrder(serverOnly, serverOrder, mergeKey, kind);
  return mergeSortedSlice(sortedServerOnly, sortedPatch, serverOrder, mergeKey, kind);
}

/** Splits `list` into the items present in `by` and the server-only rest. */
function partitionByPresence(
  list: readonly unknown[],
  by: readonly unknown[],
  mergeKey: string,
): [unknown[], unknown[]] {
  const present: unknown[] = [];
  const serverOnly: unknown[] = [];
  if (mergeKey === '') {
    const inBy = new Set(by);
    for (const v of list) (inBy.has(v) ? present : serverOnly).push(v);
    return [present, serverOnly];
  }
  for (const v of list) {
    if (!isRecord(v)) throw errBadArgType('map[string]interface {}', v);
    if (!Object.hasOwn(v, mergeKey)) throw errNoMergeKey(v, mergeKey);
    (findMapByKeyValue(by, mergeKey, v[mergeKey]) >= 0 ? present : serverOnly).push(v);
  }
  return [present, serverOnly];
}

// --- merging ------------------------------------------------------------------------------------------------

function lookup(schema: Schema | undefined, key: string): FieldTags {
  return schema !== undefined && Object.hasOwn(schema, key) ? schema[key]! : {};
}

/** The original key of a `$deleteFromPrimitiveList/<key>` or `$setElementOrder/<key>` directive. */
function extractKey(s: string, prefix: string): string {
  const slash = s.indexOf('/');
  if (slash < 0 || s.slice(0, slash) !== prefix) {
    throw prefix === DELETE_FROM_PRIMITIVE_LIST_PREFIX
      ? errBadPatchFormatForPrimitiveList()
      : errBadPatchFormatForSetElementOrderList();
  }
  return s.slice(slash + 1);
}

function mergeKeyValueEqual(left: unknown, right: unknown, mergeKey: string): boolean {
  if (mergeKey === '') return left === right;
  if (!isRecord(left)) throw errBadArgType('map[string]interface {}', left);
  if (!isRecord(right)) throw errBadArgType('map[string]interface {}', right);
  if (!Object.hasOwn(left, mergeKey)) throw errNoMergeKey(left, mergeKey);
  if (!Object.hasOwn(right, mergeKey)) throw errNoMergeKey(right, mergeKey);
  return left[mergeKey] === right[mergeKey];
}

/** The patch list must follow the `$setElementOrder` list: same relative order, no items outside it. */
function validatePatchWithSetOrderList(patchList: unknown, setOrderList: unknown, mergeKey: string): void {
  if (!Array.isArray(setOrderList) || !Array.isArray(patchList)) throw errBadPatchFormatForSetElementOrderList();
  if (setOrderList.length === 0 || patchList.length === 0) return;
  const nonDelete = mergeKey !== '' ? extractToDeleteItems(patchList)[0] : patchList;
  let p = 0;
  let s = 0;
  while (p < nonDelete.length && s < setOrderList.length) {
    if (isRecord(nonDelete[p]) && Object.hasOwn(nonDelete[p] as JsonMap, DIRECTIVE_MARKER)) {
      p++;
      continue;
    }
    if (mergeKeyValueEqual(nonDelete[p], setOrderList[s], mergeKey)) p++;
    s++;
  }
  if (p < nonDelete.length && s >= setOrderList.length) {
    throw new PatchError(
      `The order in patch list:\n${goValue(patchList)}\n doesn't match ${SET_ELEMENT_ORDER_PREFIX} list:\n${goValue(setOrderList)}\n`,
    );
  }
}

function handleDirectiveInMergeMap(directive: unknown, patch: JsonMap): JsonMap {
  if (directive === 'replace') {
    const rest = { ...patch };
    Reflect.deleteProperty(rest, DIRECTIVE_MARKER);
    return asDecoded(rest) as JsonMap;
  }
  if (directive === 'delete') return {};
  throw errBadPatchType(directive, patch);
}

/** `$retainKeys`: clears every field of `original` not listed; a patch field outside the list is refused. */
function applyRetainKeysDirective(original: JsonMap, patch: JsonMap): void {
  if (!Object.hasOwn(patch, RETAIN_KEYS_DIRECTIVE)) return;
  const list = patch[RETAIN_KEYS_DIRECTIVE];
  Reflect.deleteProperty(patch, RETAIN_KEYS_DIRECTIVE);
  if (!Array.isArray(list)) throw errBadPatchFormatForRetainKeys();
  const retained = new Set<unknown>(list);
  for (const [k, v] of Object.entries(patch)) {
    if (v === null || k.startsWith(DELETE_FROM_PRIMITIVE_LIST_PREFIX) || k.startsWith(SET_ELEMENT_ORDER_PREFIX))
      continue;
    if (!retained.has(k)) throw errBadPatchFormatForRetainKeys();
  }
  for (const k of Object.keys(original)) if (!retained.has(k)) Reflect.deleteProperty(original, k);
}

/**
 * Each `$setElementOrder/<field>` merges `<field>` of the patch into the original now, then orders the result:
 * the `$setElementOrder` list first, the original order for items the patch does not mention.
 */
function mergePatchIntoOriginal(original: JsonMap, patch: JsonMap, schema: Schema | undefined): void {
  for (const key of Object.keys(patch)) {
    if (!key.startsWith(SET_ELEMENT_ORDER_PREFIX)) continue;
    const setOrder = patch[key];
    Reflect.deleteProperty(patch, key);
    if (!Array.isArray(setOrder)) throw errBadArgType('[]interface {}', setOrder);
    const field = extractKey(key, SET_ELEMENT_ORDER_PREFIX);
    const foundOriginal = Object.hasOwn(original, field);
    const foundPatch = Object.hasOwn(patch, field);
    if (foundOriginal && !Array.isArray(original[field])) throw errBadArgType('[]interface {}', original[field]);
    if (foundPatch && !Array.isArray(patch[field])) throw errBadArgType('[]interface {}', patch[field]);
    const originalList = foundOriginal ? (original[field] as unknown[]) : [];
    const patchList = foundPatch ? (patch[field] as unknown[]) : [];
    const tags = lookup(schema, field);
    const mergeKey = tags.mergeKey ?? '';
    validatePatchWithSetOrderList(patchList, setOrder, mergeKey);
    let merged: unknown[];
    if (foundOriginal && foundPatch) merged = mergeListField(originalList, patchList, tags, false);
    else if (foundOriginal) merged = originalList;
    else if (foundPatch) merged = patchList;
    else return;
    const [patchItems, serverOnly] = partitionByPresence(merged, setOrder, mergeKey);
    const kind = sliceElementType(originalList, patchList);
    original[field] = normalizeElementOrder(patchItems, serverOnly, setOrder, originalList, mergeKey, kind);
    Reflect.deleteProperty(patch, field);
  }
}

/** A list field: merged by its tags when it has `patchStrategy: merge`, otherwise replaced by the patch. */
function mergeListField(original: unknown[], patch: unknown[], tags: FieldTags, isDeleteList: boolean): unknown[] {
  return tags.merge === true
    ? mergeSlice(original, patch, tags.fields, tags.mergeKey ?? '', isDeleteList)
    : (asDecoded(patch) as unknown[]);
}

function mergeSlice(
  original: unknown[],
  patch: unknown[],
  elemSchema: Schema | undefined,
  mergeKey: string,
  isDeleteList: boolean,
): unknown[] {
  if (original.length === 0 && patch.length === 0) return original;
  const kind = sliceElementType(original, patch);
  let merged: unknown[];
  let base = original;
  let patchItems = patch;
  if (kind !== 'map[string]interface {}') {
    if (isDeleteList) {
      const toDelete = new Set(patch);
      return original.filter((v) => !toDelete.has(v));
    }
    merged = deduplicateScalars([...original, ...patch]);
  } else {
    // Every merge list of maps has a merge key; only the string lists (finalizers, podCIDRs) have none.
    if (mergeKey === '') throw new PatchError('cannot merge lists without merge key for type string');
    [base, patchItems] = mergeSliceWithSpecialElements(original, patch, mergeKey);
    merged = mergeSliceWithoutSpecialElements(base, patchItems, mergeKey, elemSchema);
  }
  const [present, serverOnly] = partitionByPresence(merged, patchItems, mergeKey);
  return normalizeElementOrder(present, serverOnly, patchItems, base, mergeKey, kind);
}

/** Applies `$patch: delete` and `$patch: replace` elements; returns the new base and the plain patch items. */
function mergeSliceWithSpecialElements(
  original: unknown[],
  patch: unknown[],
  mergeKey: string,
): [unknown[], unknown[]] {
  const plain: unknown[] = [];
  let replace = false;
  let base = original;
  for (const v of patch) {
    const item = v as JsonMap;
    if (!Object.hasOwn(item, DIRECTIVE_MARKER)) {
      plain.push(item);
      continue;
    }
    const directive = item[DIRECTIVE_MARKER];
    if (directive === 'delete') {
      if (!Object.hasOwn(item, mergeKey)) throw errNoMergeKey(item, mergeKey);
      base = deleteMatchingEntries(base, mergeKey, item[mergeKey]);
    } else if (directive === 'replace') {
      replace = true;
    } else if (directive === 'merge') {
      throw new PatchError('merging lists cannot yet be specified in the patch');
    } else {
      throw errBadPatchType(directive, item);
    }
  }
  return replace ? [asDecoded(plain) as unknown[], []] : [base, plain];
}

/** Removes every item whose merge key has `value`. */
function deleteMatchingEntries(list: readonly unknown[], mergeKey: string, value: unknown): unknown[] {
  const out = [...list];
  for (let i = findMapByKeyValue(out, mergeKey, value); i >= 0; i = findMapByKeyValue(out, mergeKey, value))
    out.splice(i, 1);
  return out;
}

/** Merges each patch item into the original item with the same merge key value, or appends it. */
function mergeSliceWithoutSpecialElements(
  original: unknown[],
  patch: unknown[],
  mergeKey: string,
  elemSchema: Schema | undefined,
): unknown[] {
  const out = [...original];
  for (const v of patch) {
    const item = v as JsonMap;
    if (!Object.hasOwn(item, mergeKey)) throw errNoMergeKey(item, mergeKey);
    const i = findMapByKeyValue(out, mergeKey, item[mergeKey]);
    if (i >= 0) out[i] = mergeMap(out[i] as JsonMap, item, elemSchema);
    else out.push(asDecoded(item));
  }
  return out;
}

/** mergeMap: merges `patch` into `original` (both owned by the caller, changed in place) under `schema`. */
function mergeMap(original: JsonMap, patch: JsonMap, schema: Schema | undefined): JsonMap {
  if (Object.hasOwn(patch, DIRECTIVE_MARKER)) return handleDirectiveInMergeMap(patch[DIRECTIVE_MARKER], patch);
  applyRetainKeysDirective(original, patch);
  mergePatchIntoOriginal(original, patch, schema);
  for (const [patchKey, patchV] of Object.entries(patch)) {
    let k = patchKey;
    let isDeleteList = false;
    if (patchKey.startsWith(DELETE_FROM_PRIMITIVE_LIST_PREFIX)) {
      k = extractKey(patchKey, DELETE_FROM_PRIMITIVE_LIST_PREFIX);
      isDeleteList = true;
    }
    if (patchV === null) {
      Reflect.deleteProperty(original, k);
      continue;
    }
    // Any other `$` key is no field of the kind's type: decoding drops it.
    if (k.startsWith('$')) continue;
    if (!Object.hasOwn(original, k)) {
      original[k] = asDecoded(patchV);
      continue;
    }
    const current = original[k];
    if (goTypeOf(current) !== goTypeOf(patchV)) {
      original[k] = asDecoded(patchV);
      continue;
    }
    const tags = lookup(schema, k);
    if (isRecord(current)) original[k] = mergeMap(current, patchV as JsonMap, tags.fields);
    else if (Array.isArray(current)) original[k] = mergeListField(current, patchV as unknown[], tags, isDeleteList);
    else original[k] = patchV;
  }
  return original;
}

/**
 * Applies a strategic merge patch to `doc` for `kind`, never changing either input. A kind without Go types is
 * `415 UnsupportedMediaType`; a malformed patch is `400 BadRequest`, `422 Invalid` or `500` as upstream serves it.
 */
export function applyStrategicMergePatch(doc: KubeObject, patch: unknown, kind: KindInfo): KubeObject {
  const schema = SCHEMAS.get(schemaKey(kind));
  if (schema === undefined) {
    throw new ApiError(
      'UnsupportedMediaType',
      'the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json',
    );
  }
  if (patch === null) return structuredClone(doc);
  if (!isRecord(patch)) {
    throw new ApiError(
      'BadRequest',
      `json: cannot unmarshal ${goJsonKind(patch)} into Go value of type map[string]interface {}`,
    );
  }
  try {
    return mergeMap(structuredClone(doc), structuredClone(patch), schema) as KubeObject;
  } catch (e) {
    if (e instanceof PatchError) throw toApiError(e);
    throw e;
  }
}
