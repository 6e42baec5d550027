/**
 * Node flags for processes that carry traffic (ztunnel; the bench's Node tunnel for a fair floor). A byte stream
 * through Node allocates a few small objects per chunk, and with V8's default young generation (1 MiB semi-spaces,
 * grown on demand and shrunk back after idle periods) many of them live just long enough to be promoted, so the
 * old generation fills and is marked several times a second under load. A 16 MiB floor keeps them in the young
 * generation: measured here, a ztunnel pair loaded after 20-30 s idle used 5-7 CPU s/GB without it, ~3.3 with it.
 * These flags cannot be set from NODE_OPTIONS or at run time; launchers pass them (the `amesh` bin's shebang does).
 */
export const DATA_PATH_NODE_FLAGS: readonly string[] = Object.freeze(['--min-semi-space-size=16']);

/** Why the running process lacks the data-path flags (as given on node's command line), or undefined when it has them. */
export function dataPathFlagsMissing(execArgv: readonly string[] = process.execArgv): string | undefined {
  const missing = DATA_PATH_NODE_FLAGS.filter((f) => !execArgv.some((a) => a.startsWith(f.split('=')[0]!)));
  if (missing.length === 0) return undefined;
  return `node was started without ${missing.join(' ')}: under load after idle periods, CPU per byte rises and throughput drops; ` +
    `start it as \`node ${DATA_PATH_NODE_FLAGS.join(' ')} dist/src/cli/main.js ztunnel\` or through the \`amesh\` bin`;
}
