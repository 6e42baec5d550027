import type { StatusCause } from '../api-error.js';
import type { Strategy } from './strategy.js';
import type { KubeObject } from '../kube-object.js';
import { key, required, tooLong } from '../validation/field-errors.js';
import { asObject, asString } from '../validation/json-fields.js';
import { immutable } from '../validation/object-meta.js';
import { MAX_CONFIG_DATA_SIZE, validateDataKeys, validateImmutableData } from './config-data.js';

/**
 * Secrets, after k8s.io/kubernetes `pkg/registry/core/secret/strategy.go`, `pkg/apis/core/v1/conversion.go`
 * (`stringData` is written into `data` and never stored) and `ValidateSecret`/`ValidateSecretUpdate`: keys are
 * config keys, data totals at most 1 MiB, typed secrets carry their required keys, and the type is immutable.
 * That `data` values are base64 is checked on decode (`decode.ts`).
 */

export const DEFAULT_SECRET_TYPE = 'Opaque';

/** Keys each well-known Secret type must carry, in `data` or (for service account tokens) in annotations. */
const REQUIRED_DATA: Record<string, readonly string[]> = {
  'kubernetes.io/tls': ['tls.crt', 'tls.key'],
  'kubernetes.io/dockercfg': ['.dockercfg'],
  'kubernetes.io/dockerconfigjson': ['.dockerconfigjson'],
  'kubernetes.io/ssh-auth': ['ssh-privatekey'],
};
const SERVICE_ACCOUNT_NAME_ANNOTATION = 'kubernetes.io/service-account.name';

function prepare(obj: KubeObject): void {
  const stringData = asObject(obj.stringData);
  if (stringData !== undefined) {
    const data = { ...(asObject(obj.data) ?? {}) };
    for (const [k, v] of Object.entries(stringData))
      if (typeof v === 'string') data[k] = Buffer.from(v, 'utf8').toString('base64');
    obj.data = data;
  }
  delete obj.stringData;
  if ((asString(obj.type) ?? '') === '') obj.type = DEFAULT_SECRET_TYPE;
}

function validateSecret(obj: KubeObject): StatusCause[] {
  const data = asObject(obj.data) ?? {};
  const errs = validateDataKeys(data, 'data');
  let size = 0;
  for (const v of Object.values(data)) if (typeof v === 'string') size += Buffer.from(v, 'base64').length;
  if (size > MAX_CONFIG_DATA_SIZE) errs.push(tooLong('data', MAX_CONFIG_DATA_SIZE));
  const type = asString(obj.type) ?? '';
  if (
    type === 'kubernetes.io/service-account-token' &&
    (asString(obj.metadata.annotations?.[SERVICE_ACCOUNT_NAME_ANNOTATION]) ?? '') === ''
  )
    errs.push(required(key('metadata.annotations', SERVICE_ACCOUNT_NAME_ANNOTATION)));
  if (type === 'kubernetes.io/basic-auth' && !Object.hasOwn(data, 'username') && !Object.hasOwn(data, 'password'))
    errs.push(required(key('data', 'username')), required(key('data', 'password')));
  for (const k of REQUIRED_DATA[type] ?? []) if (!Object.hasOwn(data, k)) errs.push(required(key('data', k)));
  return errs;
}

export const secretStrategy: Strategy = {
  prepareForCreate: prepare,
  prepareForUpdate: prepare,
  validate: validateSecret,
  validateUpdate(obj, old) {
    return [
      ...immutable('type', obj.type ?? '', old.type ?? ''),
      ...validateImmutableData(obj, old, ['data']),
      ...validateSecret(obj),
    ];
  },
};
