/**
 * The programs `amesh up` and `amesh demo` run on the host, found on PATH before anything is created, so a
 * missing one is named with the Debian package that has it instead of failing half-way through the start.
 */
import { accessSync, constants } from 'node:fs';
import path from 'node:path';
import { MeshError } from '../lib/errors.js';

/** A program run on the host, the Debian package that has it, and what it is for. */
export interface HostTool {
  readonly cmd: string;
  readonly pkg: string;
  readonly why: string;
  /** Where it is looked for instead of PATH (a CNI plugin, in the plugin directories). */
  readonly dirs?: readonly string[];
}

/** Finds `cmd` as execvp would, on `envPath`; undefined when it is not there. */
export function resolveCommand(cmd: string, envPath: string): string | undefined {
  const candidates = cmd.includes('/')
    ? [cmd]
    : envPath
        .split(':')
        .filter((d) => d !== '')
        .map((d) => path.join(d, cmd));
  return candidates.find((c) => {
    try {
      accessSync(c, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/** Throws UP_ERR_HOST_TOOL naming every tool missing (from `envPath`, or its own `dirs`) and the packages to install. */
export function requireHostTools(tools: readonly HostTool[], envPath = process.env['PATH'] ?? ''): void {
  const missing = tools.filter((t) => resolveCommand(t.cmd, t.dirs?.join(':') ?? envPath) === undefined);
  if (missing.length === 0) return;
  const pkgs = [...new Set(missing.map((t) => t.pkg))].join(' ');
  const where = (t: HostTool): string => (t.dirs === undefined ? '' : `, looked for in ${t.dirs.join(' and ')}`);
  throw new MeshError(
    'UP_ERR_HOST_TOOL',
    `missing on this machine: ${missing.map((t) => `${t.cmd} (${t.why}${where(t)})`).join(', ')}; install them: apt-get install ${pkgs}`,
  );
}
