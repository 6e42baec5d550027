/**
 * The CNI spec versions amesh-cni speaks and which operations each allows. The reference skeleton
 * (containernetworking/cni pkg/skel/skel.go) refuses a config version the plugin does not list, CHECK before 0.4.0
 * and GC and STATUS before 1.1.0 (the versions that introduced them, SPEC.md "Released versions"); so does this.
 * 0.1.0 and 0.2.0 are not spoken: their results have another shape (`ip4`/`ip6`) and no runtime chains with them.
 */
import { MeshError } from '../../lib/errors.js';
import type { CniCommand } from './cni-env.js';

export const CNI_VERSIONS = ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'] as const;
export type CniVersion = (typeof CNI_VERSIONS)[number];
export const LATEST_CNI_VERSION: CniVersion = '1.1.0';

const INTRODUCED_IN: Readonly<Partial<Record<CniCommand, CniVersion>>> = {
  CHECK: '0.4.0',
  GC: '1.1.0',
  STATUS: '1.1.0',
};

export const isCniVersion = (v: unknown): v is CniVersion => (CNI_VERSIONS as readonly unknown[]).includes(v);

/** The config's `cniVersion` when amesh-cni speaks it and it allows `command`; throws CNI_ERR_VERSION otherwise. */
export function checkCniVersion(version: unknown, command: CniCommand): CniVersion {
  const supported = `amesh-cni supports ${CNI_VERSIONS.join(', ')}`;
  if (version === undefined)
    throw new MeshError('CNI_ERR_VERSION', `the network config has no "cniVersion" (${supported})`);
  if (!isCniVersion(version))
    throw new MeshError(
      'CNI_ERR_VERSION',
      `the network config's cniVersion ${JSON.stringify(version)} is not supported (${supported})`,
    );
  const since = INTRODUCED_IN[command];
  if (since !== undefined && CNI_VERSIONS.indexOf(version) < CNI_VERSIONS.indexOf(since)) {
    throw new MeshError('CNI_ERR_VERSION', `cniVersion ${version} does not allow ${command} (it came in CNI ${since})`);
  }
  return version;
}

/**
 * The VERSION answer (SPEC.md "VERSION Success"): `cniVersion` echoes the input's when amesh-cni speaks it, else
 * names the newest it speaks, so a runtime can always decode the answer; input that is not JSON is not an error here,
 * as the skeleton does not read stdin for VERSION at all.
 */
export function versionResult(stdin: string): { cniVersion: CniVersion; supportedVersions: readonly CniVersion[] } {
  let asked: unknown;
  try {
    asked = (JSON.parse(stdin) as { cniVersion?: unknown } | null)?.cniVersion;
  } catch {
    asked = undefined;
  }
  return { cniVersion: isCniVersion(asked) ? asked : LATEST_CNI_VERSION, supportedVersions: CNI_VERSIONS };
}
