// The external commands the image build runs (mmdebstrap, buildah, tar): checked up front, each missing one named
// with the Debian package that has it, and run so that an interrupted build stops the command it is in.
import { spawn, spawnSync } from 'node:child_process';

/** The Debian package of each tool the build uses. */
export const TOOL_PACKAGES = Object.freeze({ mmdebstrap: 'mmdebstrap', buildah: 'buildah', tar: 'tar' });

/** Throws, naming the packages to install, unless every tool in `tools` is on PATH. */
export function requireTools(tools) {
  const missing = tools.filter((t) => spawnSync('sh', ['-c', `command -v ${t}`], { stdio: 'ignore' }).status !== 0);
  if (missing.length === 0) return;
  const packages = missing.map((t) => TOOL_PACKAGES[t] ?? t);
  throw new Error(
    `${missing.join(', ')} not found on PATH: install Debian's ${packages.join(' ')} (apt-get install ${packages.join(' ')}); rootless builds also need uidmap`,
  );
}

/** A failed command: its name and exit, with the end of what it printed. */
export class CommandFailed extends Error {}

/**
 * Runs commands until `signal` aborts; then the running one's process group gets SIGINT, as from a terminal's
 * Ctrl-C, and `run` rejects with the abort reason once it has exited (mmdebstrap, for one, cleans up its mounts and
 * temporary directory first). Each command has a process group of its own, so the build is stopped the same way
 * whether Ctrl-C reached the whole terminal group or a signal only this process; mmdebstrap given SIGTERM alone
 * would finish its setup, minutes, before cleaning up.
 * `run(cmd, args, { progress, env })` resolves with the command's stdout; `progress` gets each stderr line as it comes.
 */
export function commandRunner(signal) {
  return (cmd, args, o = {}) =>
    new Promise((resolve, reject) => {
      if (signal.aborted) {
        reject(signal.reason);
        return;
      }
      const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], env: o.env ?? process.env, detached: true });
      const stop = () => {
        try {
          process.kill(-child.pid, 'SIGINT');
        } catch {
          // The group is gone: the command has exited.
        }
      };
      signal.addEventListener('abort', stop, { once: true });
      let stdout = '';
      let stderr = '';
      let partial = '';
      child.stdout.on('data', (d) => (stdout += d.toString()));
      child.stderr.on('data', (d) => {
        stderr += d.toString();
        const lines = (partial + d.toString()).split('\n');
        partial = lines.pop();
        if (o.progress !== undefined) for (const l of lines) o.progress(l);
      });
      child.once('error', (e) => {
        signal.removeEventListener('abort', stop);
        reject(e);
      });
      child.once('close', (status, sig) => {
        signal.removeEventListener('abort', stop);
        if (signal.aborted) reject(signal.reason);
        else if (status === 0) resolve(stdout);
        else
          reject(
            new CommandFailed(
              `${cmd} ${args.join(' ')} ${sig === null ? `exited ${status}` : `was killed (${sig})`}:\n${stderr.trim().split('\n').slice(-20).join('\n')}`,
            ),
          );
      });
    });
}
