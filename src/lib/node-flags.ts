/**
 * Node flags for processes that carry traffic (ztunnel; the bench's Node tunnel for a fair floor). Both are about
 * when V8 collects garbage, and cannot be set from NODE_OPTIONS or at run time; launchers pass them (the `amesh`
 * bin's shebang does). docs/performance.md has the measurements ("The young-generation flag on our HTTP/2 layer",
 * "The old-generation floor").
 *
 * - `--min-semi-space-size=16`: a byte stream through Node allocates a few small objects per chunk, and with V8's
 *   default young generation (1 MiB semi-spaces, grown on demand and shrunk back after idle periods) many live just
 *   long enough to be promoted, so the old generation fills and is marked several times a second. A 16 MiB floor
 *   keeps them young: a ztunnel pair loaded after 20-30 s idle used 5-7 CPU s/GB without it, ~3.3 with it.
 * - `--initial-old-space-size=64`: V8 starts marking the old generation when what is left below its limit, less
 *   the external memory (Buffers, TLS buffers) allocated since the last mark, falls under the new space's capacity.
 *   A ztunnel's live heap is ~9 MiB, so its limit sits ~24 MiB above it, and a few MiB of data in flight start a
 *   full mark: 60 mark-compacts in 5 s of one stream, a fifth of the CPU. V8 keeps the limit at or above the
 *   configured initial size, so with 64 MiB none run under that load; the memory reducer still collects an idle
 *   process. It reserves nothing (idle RSS is unchanged); under load garbage may fill the old generation up to the
 *   floor before a mark (~25 MiB more RSS per ztunnel after the bench's connection churn).
 */
export const DATA_PATH_NODE_FLAGS: readonly string[] = Object.freeze([
  '--min-semi-space-size=16',
  '--initial-old-space-size=64',
]);

/** Why the running process lacks the data-path flags (as given on node's command line), or undefined when it has them. */
export function dataPathFlagsMissing(execArgv: readonly string[] = process.execArgv): string | undefined {
  const missing = DATA_PATH_NODE_FLAGS.filter((f) => !execArgv.some((a) => a.startsWith(f.split('=')[0]!)));
  if (missing.length === 0) return undefined;
  return (
    `node was started without ${missing.join(' ')}: under load after idle periods, CPU per byte rises and throughput drops; ` +
    `start it as \`node ${DATA_PATH_NODE_FLAGS.join(' ')} dist/bundle/amesh.js ztunnel\` or through the \`amesh\` bin`
  );
}
