/**
 * The amesh-cni executable (bin/amesh-cni runs it): a container runtime starts it once per operation with the CNI_*
 * environment and the network config on stdin, reads the result on stdout and the exit code. Logs go to stderr,
 * since stdout belongs to the protocol (JSON, as Istio's plugin logs).
 */
import { LogControl } from '../../lib/log.js';
import { runCniPlugin } from './cni-plugin.js';
import { isOwnNetns } from './own-netns.js';
import { postCniAddEvent } from './plugin-event-client.js';

/** Istio's pause between two pod lookups (cni/pkg/plugin/plugin.go podRetrievalInterval). */
const LOOKUP_RETRY_DELAY_MS = 1_000;

async function readStdin(): Promise<string> {
  // Someone running the plugin by hand at a terminal gets an answer instead of a wait for input.
  if (process.stdin.isTTY) return '';
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

const logs = new LogControl({ format: 'json', level: 'info', component: 'amesh-cni', out: process.stderr });
const outcome = await runCniPlugin(process.env, readStdin, {
  // Loaded only when an ADD reads the pod from the API; most runs never do.
  readPod: async (kubeconfig, namespace, name) =>
    (await import('./pod-reader.js')).readPodFacts(kubeconfig, namespace, name),
  postAddEvent: postCniAddEvent,
  isOwnNetns,
  retryDelayMs: LOOKUP_RETRY_DELAY_MS,
  log: logs.scope('cni-plugin'),
  setLogLevel: (spec) => logs.apply(spec),
});
// Exit as soon as the result is out: the runtime waits for the process, and a request the plugin gave up on must not
// keep it alive.
process.stdout.write(outcome.stdout, () => process.exit(outcome.exitCode));
