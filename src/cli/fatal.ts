import { describeError } from '../lib/errors.js';
import type { LogControl } from '../lib/log.js';

/** Prints a start-up failure as one actionable line and exits non-zero. */
export function fatal(e: unknown, logs?: LogControl): never {
  if (logs !== undefined) logs.scope('main').fatal({ error: describeError(e) }, 'failed to start');
  else process.stderr.write(`error: ${describeError(e)}\n`);
  process.exit(1);
}
