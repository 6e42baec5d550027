/**
 * iptables rules as the node agent writes them: built in order and rendered as `iptables-restore` input exactly
 * as Istio's rule builder renders it (istio `tools/istio-iptables/pkg/builder/iptables_builder_impl.go`:
 * tables in name order, `-N` for each Istio chain in order of first use, then every rule in the order it was
 * added), applied with `iptables-restore --noflush` in a network namespace. What an earlier run left is read from
 * `iptables-save`: the jumps to our chains are deleted and the chains flushed and deleted in the same transaction
 * that creates them anew, so replacing rules never leaves a moment without them.
 */
import type { ErrorCode } from '../../lib/errors.js';
import type { NetnsRef } from '../../native/native.js';
import { mustRunInNetns } from './netns-command.js';

export type IpFamily = 4 | 6;

/** The chains and targets iptables has built in: no `-N` for them (istio `tools/istio-iptables/pkg/constants`). */
const BUILTIN_CHAINS: ReadonlySet<string> = new Set([
  'INPUT',
  'OUTPUT',
  'FORWARD',
  'PREROUTING',
  'POSTROUTING',
  'ACCEPT',
  'DROP',
  'RETURN',
  'REDIRECT',
  'MARK',
  'CONNMARK',
  'CT',
  'SNAT',
  'TPROXY',
]);

/** How long iptables-restore waits for the xtables lock (legacy backend; nft has none) before failing. */
const XTABLES_LOCK_WAIT_SECONDS = '10';

interface Rule {
  readonly table: string;
  readonly chain: string;
  readonly params: readonly string[];
}

/** An ordered set of rules for one address family. */
export class IptablesRules {
  private readonly rules: Rule[] = [];

  /** `-A chain params...` in `table`. */
  append(table: string, chain: string, ...params: string[]): this {
    this.rules.push({ table, chain, params: ['-A', chain, ...params] });
    return this;
  }

  /** `-I chain position params...` in `table`. */
  insert(table: string, chain: string, position: number, ...params: string[]): this {
    this.rules.push({ table, chain, params: ['-I', chain, String(position), ...params] });
    return this;
  }

  /** The restore lines of each table: `-N` for each Istio chain in order of first use, then the rules in order. */
  tableLines(): Map<string, string[]> {
    const lines = new Map<string, string[]>();
    const declared = new Set<string>();
    const declare = (table: string, chain: string): void => {
      const key = `${chain}:${table}`;
      if (declared.has(key)) return;
      declared.add(key);
      if (!BUILTIN_CHAINS.has(chain)) linesOf(lines, table).push(`-N ${chain}`);
    };
    for (const r of this.rules) declare(r.table, r.chain);
    for (const r of this.rules) {
      if (r.params.at(-2) === '-j') declare(r.table, r.params.at(-1)!);
    }
    for (const r of this.rules) linesOf(lines, r.table).push(r.params.join(' '));
    return lines;
  }

  /** The `iptables-restore --noflush` input, one `* table` ... `COMMIT` block per table used, tables in name order. */
  restoreText(): string {
    return formatRestore(this.tableLines());
  }
}

function linesOf(tables: Map<string, string[]>, table: string): string[] {
  let l = tables.get(table);
  if (l === undefined) tables.set(table, (l = []));
  return l;
}

function formatRestore(tables: ReadonlyMap<string, readonly string[]>): string {
  let text = '';
  for (const table of [...tables.keys()].sort()) {
    const lines = tables.get(table)!;
    if (lines.length > 0) text += `* ${table}\n${lines.join('\n')}\nCOMMIT\n`;
  }
  return text;
}

/** The binaries for a family. */
function tools(family: IpFamily): { save: string; restore: string } {
  return family === 4
    ? { save: 'iptables-save', restore: 'iptables-restore' }
    : { save: 'ip6tables-save', restore: 'ip6tables-restore' };
}

/** Applies `text` with `iptables-restore --noflush` (or ip6tables-restore) in `netns`. */
export async function restoreRules(
  code: ErrorCode,
  netns: NetnsRef | undefined,
  family: IpFamily,
  text: string,
): Promise<void> {
  await mustRunInNetns(code, netns, tools(family).restore, ['--noflush', '--wait', XTABLES_LOCK_WAIT_SECONDS], text);
}

/** `iptables-save` (or ip6tables-save) of `netns`. */
function saveRules(code: ErrorCode, netns: NetnsRef | undefined, family: IpFamily): Promise<string> {
  return mustRunInNetns(code, netns, tools(family).save, []);
}

/**
 * The restore lines, per table, that remove every chain `ours` accepts from an `iptables-save` dump: the rules in
 * other chains that jump (or go) to one are deleted, then each is flushed and deleted.
 */
export function removalLines(save: string, ours: (chain: string) => boolean): Map<string, string[]> {
  const tables = new Map<string, { jumps: string[]; chains: string[] }>();
  let current: { jumps: string[]; chains: string[] } | undefined;
  for (const line of save.split('\n')) {
    if (line.startsWith('*')) {
      current = { jumps: [], chains: [] };
      tables.set(line.slice(1).trim(), current);
    } else if (current === undefined) {
      continue;
    } else if (line.startsWith(':')) {
      const chain = line.slice(1).split(' ')[0]!;
      if (ours(chain)) current.chains.push(chain);
    } else if (line.startsWith('-A ')) {
      const words = line.split(' ');
      const jumps = words.some((w, i) => (w === '-j' || w === '-g') && i + 1 < words.length && ours(words[i + 1]!));
      if (jumps && !ours(words[1]!)) current.jumps.push(`-D${line.slice(2)}`);
    }
  }
  const out = new Map<string, string[]>();
  for (const [table, { jumps, chains }] of tables) {
    const lines = [...jumps, ...chains.map((c) => `-F ${c}`), ...chains.map((c) => `-X ${c}`)];
    if (lines.length > 0) out.set(table, lines);
  }
  return out;
}

/**
 * Replaces, in one family's tables in `netns`, every chain `ours` accepts (and the jumps to them) with `rules`,
 * one table at a time atomically; with no `rules`, only removes them. Nothing to do runs nothing.
 */
export async function replaceChains(
  code: ErrorCode,
  netns: NetnsRef | undefined,
  family: IpFamily,
  ours: (chain: string) => boolean,
  rules?: IptablesRules,
): Promise<void> {
  const tables = removalLines(await saveRules(code, netns, family), ours);
  for (const [table, lines] of rules?.tableLines() ?? []) linesOf(tables, table).push(...lines);
  const text = formatRestore(tables);
  if (text !== '') await restoreRules(code, netns, family, text);
}
