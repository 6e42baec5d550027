import { MeshError } from './errors.js';

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Parses Go/Rust-style durations as Istio's env vars use them: "300ms", "10s", "5m", "1h30m", "24h". */
export function parseDuration(s: string, what: string): number {
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h)/gy;
  let total = 0;
  let matched = 0;
  let m: RegExpExecArray | null;
  while ((m = re.exec(s)) !== null) {
    total += Number(m[1]) * UNITS[m[2]!]!;
    matched = re.lastIndex;
  }
  if (s === '' || matched !== s.length) {
    throw new MeshError('AMESH_ERR_CONFIG', `${what}: "${s}" is not a duration (use e.g. 500ms, 10s, 5m, 24h)`);
  }
  return Math.round(total);
}
