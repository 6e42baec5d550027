import { isDeepStrictEqual } from 'node:util';
import type { StatusCause } from '../api-error.js';
import type { KubeObject } from '../kube-object.js';
import { forbidden, invalid, key } from '../validation/field-errors.js';
import { isConfigMapKey } from '../validation/formats.js';
import { asObject } from '../validation/json-fields.js';

/**
 * What ConfigMaps and Secrets share, after k8s.io/kubernetes `pkg/apis/core/validation/validation.go`
 * (`ValidateConfigMap`, `ValidateSecret` and their updates): keys are config keys, the data totals at most
 * 1 MiB, and once `immutable: true` is stored the data and the flag stay as they are.
 */

/** ConfigMaps and Secrets hold at most 1 MiB of data (`MaxSecretSize`), what etcd takes in one value. */
export const MAX_CONFIG_DATA_SIZE = 1024 * 1024;

export function validateDataKeys(data: Record<string, unknown> | undefined, field: string): StatusCause[] {
  const errs: StatusCause[] = [];
  for (const k of Object.keys(data ?? {})) for (const m of isConfigMapKey(k)) errs.push(invalid(key(field, k), k, m));
  return errs;
}

/** The `immutable` flag may not be unset, nor the `fields` changed, once an object was stored immutable. */
export function validateImmutableData(obj: KubeObject, old: KubeObject, fields: readonly string[]): StatusCause[] {
  if (old.immutable !== true) return [];
  const errs: StatusCause[] = [];
  if (obj.immutable !== true) errs.push(forbidden('immutable', 'field is immutable when `immutable` is set'));
  for (const f of fields)
    if (!isDeepStrictEqual(asObject(obj[f]) ?? {}, asObject(old[f]) ?? {}))
      errs.push(forbidden(f, 'field is immutable when `immutable` is set'));
  return errs;
}
