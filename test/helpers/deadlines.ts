/**
 * How long a test waits for something that should happen promptly (a component ready, a log line, a config
 * applied) before it fails. Generous: test files share the machine's cores, and a deadline is a failure detector,
 * never a measure of speed.
 */
export const TEST_DEADLINE_MS = 30_000;
