import type { StatusCause } from '../api-error.js';

/**
 * Field errors as `StatusCause`s, worded as k8s.io/apimachinery `pkg/util/validation/field/errors.go` words them
 * (`ErrorBody`): the cause `reason` is the error type (`FieldValueInvalid`), the `message` is the type's text, then
 * the bad value in Go's formatting, then the detail. Clients show these strings, so they match the real API
 * server's byte for byte where the value is a string, number or one of the shapes {@link goValue} knows.
 */

/** A value as Go's `%q`/`%v`/`%#v` prints it in a field error. */
export type BadValue = string | number | boolean | null | undefined | GoValue;

/** A value whose Go rendering is known up front (maps, slices, label selectors). */
export interface GoValue {
  readonly go: string;
}

function render(v: BadValue): string {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return v.go;
}

function cause(reason: string, field: string, message: string): StatusCause {
  return { reason, message, field };
}

/** `Required value` (`field.Required`). */
export function required(field: string, detail = ''): StatusCause {
  return cause('FieldValueRequired', field, detail === '' ? 'Required value' : `Required value: ${detail}`);
}

/** `Invalid value: "x": detail` (`field.Invalid`). */
export function invalid(field: string, value: BadValue, detail: string): StatusCause {
  return cause('FieldValueInvalid', field, `Invalid value: ${render(value)}${detail === '' ? '' : `: ${detail}`}`);
}

/** `Unsupported value: "x": supported values: "a", "b"` (`field.NotSupported`). */
export function notSupported(field: string, value: BadValue, valid: readonly string[]): StatusCause {
  const detail = valid.length > 0 ? `: supported values: ${valid.map((s) => JSON.stringify(s)).join(', ')}` : '';
  return cause('FieldValueNotSupported', field, `Unsupported value: ${render(value)}${detail}`);
}

/** `Forbidden: detail` (`field.Forbidden`). */
export function forbidden(field: string, detail: string): StatusCause {
  return cause('FieldValueForbidden', field, `Forbidden: ${detail}`);
}

/** `Duplicate value: "x"` (`field.Duplicate`). */
export function duplicate(field: string, value: BadValue): StatusCause {
  return cause('FieldValueDuplicate', field, `Duplicate value: ${render(value)}`);
}

/** `Too long: must have at most N bytes` (`field.TooLong`). */
export function tooLong(field: string, max: number): StatusCause {
  return cause('FieldValueTooLong', field, `Too long: must have at most ${max} bytes`);
}

/** `Too many: 600: must have at most 512 items` (`field.TooMany`). */
export function tooMany(field: string, actual: number, max: number): StatusCause {
  return cause('FieldValueTooMany', field, `Too many: ${actual}: must have at most ${max} items`);
}

/** `Invalid value: "string": detail` (`field.TypeInvalid`). */
export function typeInvalid(field: string, value: BadValue, detail: string): StatusCause {
  return cause('FieldValueTypeInvalid', field, `Invalid value: ${render(value)}: ${detail}`);
}

/** The detail of apimachinery `ValidateImmutableField`'s error. */
export const FIELD_IMMUTABLE = 'field is immutable';

/** Go's `%#v` of a `map[string]string`: keys sorted, as fmt prints maps. */
export function goStringMap(m: Record<string, unknown> | undefined): GoValue {
  if (m === undefined) return { go: 'map[string]string(nil)' };
  const entries = Object.keys(m)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${JSON.stringify(String(m[k]))}`);
  return { go: `map[string]string{${entries.join(', ')}}` };
}

/** Go's `%#v` of a `[]string`. */
export function goStringSlice(a: readonly unknown[] | undefined): GoValue {
  if (a === undefined) return { go: '[]string(nil)' };
  return { go: `[]string{${a.map((s) => JSON.stringify(String(s))).join(', ')}}` };
}

/** A composite value no Go rendering is kept for: shown as JSON (the real server prints Go's struct dump). */
export function jsonValue(v: unknown): GoValue {
  return { go: JSON.stringify(v) ?? 'null' };
}

/** Field paths as `field.Path.String()` writes them: `spec.containers[0].name`, `data[key]`. */
export function child(path: string, name: string): string {
  return path === '' ? name : `${path}.${name}`;
}

export function index(path: string, i: number): string {
  return `${path}[${i}]`;
}

export function key(path: string, k: string): string {
  return `${path}[${k}]`;
}
