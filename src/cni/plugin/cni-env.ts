/**
 * The CNI protocol parameters a runtime passes in the environment (containernetworking/cni SPEC.md, "Parameters"
 * and each operation's "Required environment parameters"), checked as the reference library's skeleton checks them
 * (pkg/skel/skel.go getCmdArgsFromEnv, pkg/utils/utils.go for container IDs and interface names). CNI_PATH is
 * required only where the spec requires it (GC): this plugin delegates to no other plugin.
 */
import { MeshError } from '../../lib/errors.js';

export const CNI_COMMANDS = ['ADD', 'DEL', 'CHECK', 'GC', 'STATUS', 'VERSION'] as const;
export type CniCommand = (typeof CNI_COMMANDS)[number];

export interface CniEnv {
  readonly command: CniCommand;
  readonly containerId: string;
  readonly netns: string;
  readonly ifName: string;
  /** CNI_ARGS as given: `K=V;K=V` (see `parseK8sArgs`). */
  readonly args: string;
  readonly path: string;
}

const REQUIRED: Readonly<Record<CniCommand, readonly string[]>> = {
  ADD: ['CNI_CONTAINERID', 'CNI_NETNS', 'CNI_IFNAME'],
  CHECK: ['CNI_CONTAINERID', 'CNI_NETNS', 'CNI_IFNAME'],
  DEL: ['CNI_CONTAINERID', 'CNI_IFNAME'],
  GC: ['CNI_PATH'],
  STATUS: [],
  VERSION: [],
};

/** A container ID or network name: an alphanumeric, then alphanumerics, `_`, `.` or `-` (SPEC.md, pkg/utils/utils.go). */
export const isCniName = (s: string): boolean => /^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/.test(s);

/** Linux's rules for an interface name (net/core/dev.c dev_valid_name), as pkg/utils/utils.go checks them. */
function interfaceNameProblem(name: string): string | undefined {
  if (name.length > 15) return 'is longer than 15 characters';
  if (name === '.' || name === '..') return 'is "." or ".."';
  if (/[/:\s]/.test(name)) return 'contains "/", ":" or whitespace';
  return undefined;
}

const envError = (message: string): MeshError => new MeshError('CNI_ERR_ENV', message);

export function parseCniEnv(env: Readonly<Record<string, string | undefined>>): CniEnv {
  const get = (name: string): string => env[name] ?? '';
  const command = get('CNI_COMMAND');
  if (command === '')
    throw envError(
      `required environment variable CNI_COMMAND is missing (one of ${CNI_COMMANDS.join(', ')}); amesh-cni is a CNI plugin, run by a container runtime`,
    );
  if (!(CNI_COMMANDS as readonly string[]).includes(command))
    throw envError(`unknown CNI_COMMAND "${command}" (one of ${CNI_COMMANDS.join(', ')})`);
  const cmd = command as CniCommand;
  const missing = REQUIRED[cmd].filter((name) => get(name) === '');
  if (missing.length > 0) throw envError(`required environment variables missing for ${cmd}: ${missing.join(', ')}`);
  const containerId = get('CNI_CONTAINERID');
  if (REQUIRED[cmd].includes('CNI_CONTAINERID') && !isCniName(containerId)) {
    throw envError(
      `CNI_CONTAINERID "${containerId}" has invalid characters (an alphanumeric, then alphanumerics, "_", "." or "-")`,
    );
  }
  const ifName = get('CNI_IFNAME');
  const ifProblem = REQUIRED[cmd].includes('CNI_IFNAME') ? interfaceNameProblem(ifName) : undefined;
  if (ifProblem !== undefined) throw envError(`CNI_IFNAME "${ifName}" ${ifProblem}`);
  return Object.freeze({
    command: cmd,
    containerId,
    netns: get('CNI_NETNS'),
    ifName,
    args: get('CNI_ARGS'),
    path: get('CNI_PATH'),
  });
}
