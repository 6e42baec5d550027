/**
 * iptables rules as the node agent writes them: built in order and rendered as `iptables-restore` input exactly
 * as Istio's rule builder renders it (istio `tools/istio-iptables/pkg/builder/iptables_builder_impl.go`:
 * tables in name order, `-N` for each Istio chain in order of first use, then every rule in the order it was
 * added), applied with `iptables-restore --noflush` in a network namespace, and removed again by reading
 * `iptables-save` and deleting the jumps to our chains, then flushing and deleting the chains.
 */
import type { ErrorCode } from '../../lib/errors.js';
import type { NetnsRef } from '../../lib/native.js';
import { mustRunInNetns } from './netns-command.js';

export type IpFamily = 4 | 6;

/** The chains and targets iptables has built in: no `-N` for them (istio `tools/istio-iptables/pkg/constants`). */
const BUILTIN_CHAINS: ReadonlySet<string> = new Set(['INPUT', 'OUTPUT', 'FORWARD', 'PREROUTING', 'POSTROUTING', 'ACCEPT', 'DROP', 'RETURN', 'REDIRECT', 'MARK', 'CONNMARK', 'CT', 'SNAT', 'TPROXY']);

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

  /** The `iptables-restore --noflush` input, one `* table` ... `COMMIT` block per table used, tables in name order. */
  restoreText(): string {
    const lines = new Map<string, string[]>();
    const declared = new Set<string>();
    const declare = (table: string, chain: string): void => {
      const key = `${chain}:${table}`;
      if (declared.has(key)) return;
      declared.add(key);
      if (!BUILTIN_CHAINS.has(chain)) tableLines(table).push(`-N ${chain}`);
    };
    const tableLines = (table: string): string[] => {
      let l = lines.get(table);
      if (l === undefined) lines.set(table, (l = []));
      return l;
    };
    for (const r of this.rules) declare(r.table, r.chain);
    for (const r of this.rules) {
      if (r.params.at(-2) === '-j') declare(r.table, r.params.at(-1)!);
    }
    for (const r of this.rules) tableLines(r.table).push(r.params.join(' '));
    let text = '';
    for (const table of [...lines.keys()].sort()) text += `* ${table}\n${lines.get(table)!.join('\n')}\nCOMMIT\n`;
    return text;
  }
}

/** The binaries for a family. */
function tools(family: IpFamily): { save: string; restore: string } {
  return family === 4 ? { save: 'iptables-save', restore: 'iptables-restore' } : { save: 'ip6tables-save', restore: 'ip6tables-restore' };
}

/** Applies `text` with `iptables-restore --noflush` (or ip6tables-restore) in `netns`. */
export async function restoreRules(code: ErrorCode, netns: NetnsRef | undefined, family: IpFamily, text: string): Promise<void> {
  await mustRunInNetns(code, netns, tools(family).restore, ['--noflush', '--wait', XTABLES_LOCK_WAIT_SECONDS], text);
}

/** `iptables-save` (or ip6tables-save) of `netns`. */
export function saveRules(code: ErrorCode, netns: NetnsRef | undefined, family: IpFamily): Promise<string> {
  return mustRunInNetns(code, netns, tools(family).save, []);
}

/**
 * The restore input that removes every chain `ours` accepts from an `iptables-save` dump: the rules in other
 * chains that jump (or go) to one are deleted, then each is flushed and deleted. Empty when there is none.
 */
export function removalText(save: string, ours: (chain: string) => boolean): string {
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
      const from = words[1]!;
      const target = words.findIndex((w, i) => (w === '-j' || w === '-g') && i + 1 < words.length && ours(words[i + 1]!));
      if (target >= 0 && !ours(from)) current.jumps.push(`-D${line.slice(2)}`);
    }
  }
  let text = '';
  for (const [table, { jumps, chains }] of tables) {
    if (jumps.length === 0 && chains.length === 0) continue;
    text += `* ${table}\n${[...jumps, ...chains.map((c) => `-F ${c}`), ...chains.map((c) => `-X ${c}`)].join('\n')}\nCOMMIT\n`;
  }
  return text;
}

/** Removes the chains `ours` accepts, and the jumps to them, from one family's tables in `netns`. */
export async function removeChains(code: ErrorCode, netns: NetnsRef | undefined, family: IpFamily, ours: (chain: string) => boolean): Promise<void> {
  const text = removalText(await saveRules(code, netns, family), ours);
  if (text !== '') await restoreRules(code, netns, family, text);
}
