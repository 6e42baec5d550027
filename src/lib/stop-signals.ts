/**
 * The signals that ask a foreground command to stop: Ctrl-C (SIGINT), SIGTERM, and SIGHUP when its terminal
 * closes. A command that tears something down on the first must not be cut short by the next (a second Ctrl-C, the
 * terminal closing meanwhile): these stay taken, and only the first calls `stop`.
 */
const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

export function onStopSignal(stop: (signal: NodeJS.Signals) => void): void {
  let stopping = false;
  const handler = (signal: NodeJS.Signals): void => {
    if (stopping) return;
    stopping = true;
    stop(signal);
  };
  for (const s of STOP_SIGNALS) process.on(s, handler);
}
