import type { StatusCause } from '../api-error.js';
import type { Strategy } from './strategy.js';
import type { KubeObject } from '../kube-object.js';
import { invalid, key, tooLong } from '../validation/field-errors.js';
import { asObject } from '../validation/json-fields.js';
import { MAX_CONFIG_DATA_SIZE, validateDataKeys, validateImmutableData } from './config-data.js';

/**
 * ConfigMaps, after k8s.io/kubernetes `pkg/registry/core/configmap/strategy.go` and `ValidateConfigMap`: keys
 * are config keys and appear in only one of `data` and `binaryData`, which total at most 1 MiB.
 */

function validateConfigMap(obj: KubeObject): StatusCause[] {
  const data = asObject(obj.data) ?? {};
  const binary = asObject(obj.binaryData) ?? {};
  const errs = [...validateDataKeys(data, 'data'), ...validateDataKeys(binary, 'binaryData')];
  for (const k of Object.keys(data))
    if (Object.hasOwn(binary, k)) errs.push(invalid(key('data', k), k, 'duplicate of key present in binaryData'));
  for (const k of Object.keys(binary))
    if (Object.hasOwn(data, k)) errs.push(invalid(key('binaryData', k), k, 'duplicate of key present in data'));
  let size = 0;
  for (const v of Object.values(data)) if (typeof v === 'string') size += Buffer.byteLength(v);
  for (const v of Object.values(binary)) if (typeof v === 'string') size += Buffer.from(v, 'base64').length;
  if (size > MAX_CONFIG_DATA_SIZE) errs.push(tooLong('', MAX_CONFIG_DATA_SIZE));
  return errs;
}

export const configMapStrategy: Strategy = {
  validate: validateConfigMap,
  validateUpdate(obj, old) {
    return [...validateImmutableData(obj, old, ['data', 'binaryData']), ...validateConfigMap(obj)];
  },
};
