import { MeshError } from './errors.js';

/** Go's strconv.ParseBool, which Istio reads its boolean env vars and annotations with; undefined when `v` is none of its spellings. */
export function parseGoBool(v: string): boolean | undefined {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(v)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(v)) return false;
  return undefined;
}

/** The boolean env var `name` (`dflt` when unset or empty); any other spelling is a config error. */
export function envGoBool(env: Readonly<Record<string, string | undefined>>, name: string, dflt: boolean): boolean {
  const v = env[name];
  if (v === undefined || v === '') return dflt;
  const b = parseGoBool(v);
  if (b === undefined) throw new MeshError('AMESH_ERR_CONFIG', `${name}: "${v}" is not a boolean (true or false)`);
  return b;
}
