/**
 * The plain-object guard for parsed JSON and YAML (request bodies, manifests, CNI events, API errors): an object
 * that is neither null nor an array, whose fields are still to be checked one by one.
 */
export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** `v` when it is a plain object, else an empty one: for optional sections read field by field. */
export function asRecord(v: unknown): Record<string, unknown> {
  return isRecord(v) ? v : {};
}
