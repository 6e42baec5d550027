/**
 * Which entries of `up.log` also reach the console, and how they read there. An error (a document the config
 * directory or the API refused, a container or node daemon that failed) is one line: where it is (the message or
 * error starts with the document's `file:line`) or which pod and container, with the command that shows its output.
 */
import { ameshInvocation } from './amesh-invocation.js';

/** Text that starts with the `file:line` of a document. */
const LOCATED = /^[^\s:]+:\d+: /;

const text = (e: Readonly<Record<string, unknown>>, key: string): string | undefined => {
  const v = e[key];
  return typeof v === 'string' ? v : undefined;
};

/** The console line for the `up.log` entry `e` of the cluster in `dataDir`, or undefined when it stays in the log. */
export function consoleAlert(e: Readonly<Record<string, unknown>>, dataDir: string): string | undefined {
  if (e['level'] !== 'error' && e['level'] !== 'fatal') return undefined;
  const message = text(e, 'message') ?? '';
  const error = text(e, 'error');
  const pod = text(e, 'pod');
  const container = text(e, 'container');
  if (error !== undefined && LOCATED.test(error)) return `${error} (${message})`;
  if (LOCATED.test(message)) return message;
  const line = `${pod ?? text(e, 'scope') ?? 'up'}: ${error === undefined ? message : `${message}: ${error}`}`;
  return pod === undefined || container === undefined
    ? line
    : `${line} (${ameshInvocation()} logs --data-dir ${dataDir} ${pod} -c ${container})`;
}
