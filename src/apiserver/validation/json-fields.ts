/**
 * Typed reads of decoded JSON. Objects reach validation as parsed JSON of unknown shape; these narrow one value
 * at a time so a validator never trusts a field's type and never throws on a malformed object.
 */
import { isRecord } from '../../lib/record.js';

export type JsonObject = Record<string, unknown>;

export function asObject(v: unknown): JsonObject | undefined {
  return isRecord(v) ? v : undefined;
}

export function asArray(v: unknown): unknown[] | undefined {
  return Array.isArray(v) ? v : undefined;
}

export function asString(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

export function asNumber(v: unknown): number | undefined {
  return typeof v === 'number' ? v : undefined;
}

/** The object at `obj[field]`, created empty when absent (for defaulting). */
export function objectField(obj: JsonObject, field: string): JsonObject {
  const existing = asObject(obj[field]);
  if (existing !== undefined) return existing;
  const created: JsonObject = {};
  obj[field] = created;
  return created;
}

/** Sets `obj[field]` to `value` when the field is absent (null counts as absent, as Go's decoder reads it). */
export function setDefault(obj: JsonObject, field: string, value: unknown): void {
  if (obj[field] === undefined || obj[field] === null) obj[field] = value;
}

/** The objects of an array field, skipping entries that are not objects (decode errors report those). */
export function objectsOf(v: unknown): JsonObject[] {
  return (asArray(v) ?? []).map(asObject).filter((o): o is JsonObject => o !== undefined);
}
