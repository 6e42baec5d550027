/**
 * What a command writes to stdout and stderr must not stop it while it tears something down: once the reader is
 * gone (a `| tee` ended by the same Ctrl-C, a closed terminal), a write fails with EPIPE or EIO, which Node raises
 * as an uncaught 'error' on the stream and the process dies half way. After `keepRunningWithoutConsole()` such an
 * error is taken, and what is written to the stream afterwards is dropped.
 */
export function keepRunningWithoutConsole(): void {
  for (const s of [process.stdout, process.stderr]) s.on('error', () => undefined);
}
