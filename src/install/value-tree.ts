/**
 * The untyped trees an install is computed on (an IstioOperator, a chart's values), with istioctl's path rules
 * (istio operator/pkg/values/map.go): `a.b.c` walks maps, `\.` escapes a dot inside a key, `[2]` indexes a list
 * (past its end: appends) and `[name:foo]` picks the list element whose `name` is `foo`. Merging is istioctl's
 * MergeFrom: maps merge key by key, anything else in the overlay replaces what was there.
 */
import { isRecord } from '../lib/record.js';

export type Tree = Record<string, unknown>;

/** A deep copy of a JSON-shaped value. */
export function cloneValue<T>(v: T): T {
  return structuredClone(v);
}

/** Merges `overlay` into `base` (changing `base`): maps key by key, everything else replaced by a copy. */
export function mergeInto(base: Tree, overlay: Tree): Tree {
  for (const [k, v] of Object.entries(overlay)) {
    const current = base[k];
    if (isRecord(v) && isRecord(current)) mergeInto(current, v);
    else base[k] = cloneValue(v);
  }
  return base;
}

/** The merge of `layers` in order (later wins), as a new tree. */
export function merged(...layers: readonly Tree[]): Tree {
  const out: Tree = {};
  for (const l of layers) mergeInto(out, l);
  return out;
}

/** Splits `a.b\.c.list[0]` into `['a', 'b.c', 'list', '[0]']`, as istioctl's splitPath. */
export function splitPath(path: string): string[] {
  const out: string[] = [];
  let cur = '';
  for (let i = 0; i < path.length; i++) {
    const c = path[i]!;
    if (c === '\\' && path[i + 1] === '.') {
      cur += '.';
      i++;
    } else if (c === '.') {
      out.push(cur);
      cur = '';
    } else cur += c;
  }
  out.push(cur);
  return out
    .filter((s) => s !== '')
    .flatMap((s) => {
      const bracket = s.indexOf('[');
      return bracket > 0 ? [s.slice(0, bracket), s.slice(bracket)] : [s];
    });
}

const INDEX = /^\[(-?\d+)\]$/;
const KEY_VALUE = /^\[([^:\]]*):([^\]]*)\]$/;

/** The value at `path` (segments from splitPath), or undefined when any step is missing. */
export function getPath(tree: unknown, path: readonly string[]): unknown {
  let cur = tree;
  for (const seg of path) {
    const index = INDEX.exec(seg);
    const kv = KEY_VALUE.exec(seg);
    if (index !== null) cur = Array.isArray(cur) ? cur[Number(index[1])] : undefined;
    else if (kv !== null) cur = Array.isArray(cur) ? cur.find((e) => isRecord(e) && e[kv[1]!] === kv[2]) : undefined;
    else cur = isRecord(cur) ? cur[seg] : undefined;
    if (cur === undefined) return undefined;
  }
  return cur;
}

/** Why a path cannot be set: a `[key:value]` that matches no element, or a step through something not a map. */
export class PathError extends Error {}

/** Sets `value` at `path` in `tree`, creating maps (and lists before `[n]` steps) on the way, as istioctl's SetPath. */
export function setPath(tree: Tree, path: readonly string[], value: unknown): void {
  const [seg, next, ...rest] = path;
  if (seg === undefined) throw new PathError('empty path');
  if (next === undefined) {
    tree[seg] = value;
    return;
  }
  if (!next.startsWith('[')) {
    const child = tree[seg];
    if (child === undefined || child === null) tree[seg] = {};
    else if (!isRecord(child)) throw new PathError(`${seg} is not a map`);
    setPath(tree[seg] as Tree, [next, ...rest], value);
    return;
  }
  const list = tree[seg] ?? [];
  if (!Array.isArray(list)) throw new PathError(`${seg} is not a list`);
  tree[seg] = list;
  const index = INDEX.exec(next);
  const kv = KEY_VALUE.exec(next);
  let at: number;
  if (index !== null) at = Number(index[1]);
  else if (kv !== null) {
    at = list.findIndex((e) => isRecord(e) && e[kv[1]!] === kv[2]);
    if (at < 0) throw new PathError(`element ${next} not found`);
  } else throw new PathError(`unknown segment ${next}`);
  if (rest.length === 0) {
    if (at < 0 || at >= list.length) list.push(value);
    else list[at] = value;
    return;
  }
  if (at < 0 || at >= list.length) {
    const element: Tree = {};
    setPath(element, rest, value);
    list.push(element);
    return;
  }
  const element: unknown = list[at];
  if (!isRecord(element)) throw new PathError(`${seg}${next} is not a map`);
  setPath(element, rest, value);
}

/** A map at `path`, or undefined. */
export function getTree(tree: unknown, path: readonly string[]): Tree | undefined {
  const v = getPath(tree, path);
  return isRecord(v) ? v : undefined;
}

/** The string at `path`, or `dflt` when it is missing or empty. */
export function getString(tree: unknown, path: readonly string[], dflt = ''): string {
  const v = getPath(tree, path);
  return typeof v === 'string' && v !== '' ? v : dflt;
}

/** The value at a dotted path (`global.proxy.clusterDomain`, `webhooks.0.name`: a number indexes a list). */
export function at(tree: unknown, dotted: string): unknown {
  return getPath(
    tree,
    dotted.split('.').map((s) => (/^\d+$/.test(s) ? `[${s}]` : s)),
  );
}
