/**
 * The part of the network config on stdin every operation but VERSION checks (containernetworking/cni SPEC.md
 * "Plugin configuration objects"; pkg/skel/skel.go validateConfig and checkVersionAndCall): a JSON object with a
 * valid `name` and a `cniVersion` this plugin speaks. The plugin's own fields are read only by ADD
 * (`parsePluginConfig`), so a DEL or CHECK succeeds whatever they hold.
 */
import { MeshError } from '../../lib/errors.js';
import { isRecord } from '../../lib/record.js';
import { isCniName, type CniCommand } from './cni-env.js';
import { checkCniVersion, type CniVersion } from './cni-version.js';

export interface NetworkConfig {
  readonly cniVersion: CniVersion;
  readonly name: string;
  /** Every field as decoded, for the plugin's own fields and `prevResult`. */
  readonly fields: Readonly<Record<string, unknown>>;
}

/** A network config field with the wrong type or value; `field` is its path (`prevResult.ips[0].address`). */
export const configError = (field: string, problem: string): MeshError =>
  new MeshError('CNI_ERR_CONFIG', `"${field}" ${problem}`);

/** What a decoded JSON value is, for an error that says what was given instead of an object. */
function jsonKind(v: unknown): string {
  if (Array.isArray(v)) return 'an array';
  return v === null ? 'null' : typeof v;
}

/** The decoded stdin when it is a JSON object; throws CNI_ERR_DECODE otherwise. */
export function decodeNetworkConfig(stdin: string): Readonly<Record<string, unknown>> {
  let v: unknown;
  try {
    v = JSON.parse(stdin);
  } catch (e) {
    throw new MeshError('CNI_ERR_DECODE', `the network config on stdin is not JSON: ${(e as Error).message}`);
  }
  if (!isRecord(v))
    throw new MeshError('CNI_ERR_DECODE', `the network config on stdin is not a JSON object (got ${jsonKind(v)})`);
  return v;
}

export function parseNetworkConfig(fields: Readonly<Record<string, unknown>>, command: CniCommand): NetworkConfig {
  const name = fields['name'];
  if (name === undefined || name === null || name === '')
    throw new MeshError('CNI_ERR_CONFIG', 'the network config has no "name"');
  if (typeof name !== 'string' || !isCniName(name))
    throw new MeshError(
      'CNI_ERR_CONFIG',
      `the network config's "name" ${JSON.stringify(name)} is not a valid network name (an alphanumeric, then alphanumerics, "_", "." or "-")`,
    );
  const cniVersion = checkCniVersion(fields['cniVersion'], command);
  return Object.freeze({ cniVersion, name, fields });
}
