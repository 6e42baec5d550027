import { spawnSync } from 'node:child_process';
import { runToExit } from './run-to-exit.js';

/** `false` when BIND's dig runs, else the reason to skip. */
export function digSkip(): false | string {
  return spawnSync('dig', ['-v'], { stdio: 'ignore' }).status === 0
    ? false
    : 'dig is not installed (apt-get install bind9-dnsutils; .ci/run does this)';
}

/** A record as dig prints it: owner, TTL, class, type, then the rdata's fields. */
export type DigRecord = readonly string[];

export interface DigResult {
  /** The response code (`NOERROR`, `NXDOMAIN`, ...). */
  readonly status: string;
  /** The header flags (`qr`, `aa`, `tc`, `rd`, `ra`). */
  readonly flags: readonly string[];
  readonly answer: readonly DigRecord[];
  readonly authority: readonly DigRecord[];
  readonly additional: readonly DigRecord[];
}

/**
 * One query with BIND's dig, an independent resolver client, to `server:port`: `args` are dig's (the name, the
 * type, `+tcp`, `-x`, ...). Its printed response, read back by section.
 */
export async function dig(server: string, port: number, ...args: string[]): Promise<DigResult> {
  const r = await runToExit(
    'dig',
    [
      `@${server}`,
      '-p',
      String(port),
      '+tries=1',
      '+time=5',
      '+nocookie',
      '+noall',
      '+comments',
      '+answer',
      '+authority',
      '+additional',
      ...args,
    ],
    15_000,
  );
  if (r.status !== 0) throw new Error(`dig ${args.join(' ')} exited with ${String(r.status)}: ${r.stdout}${r.stderr}`);
  const status = /status: (\w+)/.exec(r.stdout)?.[1];
  const flags = /;; flags: ([^;]*);/.exec(r.stdout)?.[1];
  if (status === undefined || flags === undefined) throw new Error(`dig printed no response: ${r.stdout}`);
  const sections: Record<string, DigRecord[]> = { ANSWER: [], AUTHORITY: [], ADDITIONAL: [] };
  let current: DigRecord[] | undefined;
  for (const line of r.stdout.split('\n')) {
    const header = /^;; (\w+) SECTION:/.exec(line);
    if (header !== null) current = sections[header[1]!];
    else if (line.trim() === '' || line.startsWith(';')) continue;
    else current?.push(line.trim().split(/\s+/));
  }
  return {
    status,
    flags: flags.trim().split(/\s+/),
    answer: sections['ANSWER']!,
    authority: sections['AUTHORITY']!,
    additional: sections['ADDITIONAL']!,
  };
}
