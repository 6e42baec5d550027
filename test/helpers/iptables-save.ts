import type { TestNetns } from './netns.js';

/**
 * `iptables-save` output in a form that compares across runs and backends: no `#` comment lines, no `[packets:bytes]`
 * counters, tables in name order (iptables-nft and -legacy print them in different orders), and no table that
 * holds nothing (no rule, only built-in chains with policy ACCEPT: iptables-nft keeps such a table after its last
 * rule goes, and it filters nothing).
 */
export function normalizeSave(save: string): string {
  const blocks: { table: string; lines: string[] }[] = [];
  for (const raw of save.split('\n')) {
    const line = raw.replace(/ \[\d+:\d+\]$/, '');
    if (line === '' || line.startsWith('#')) continue;
    if (line.startsWith('*')) blocks.push({ table: line.slice(1), lines: [line] });
    else blocks.at(-1)?.lines.push(line);
  }
  const empty = (b: { lines: string[] }): boolean =>
    b.lines.every((l) => l.startsWith('*') || l === 'COMMIT' || /^:\S+ ACCEPT$/.test(l));
  return blocks
    .filter((b) => !empty(b))
    .sort((a, b) => a.table.localeCompare(b.table))
    .map((b) => b.lines.join('\n') + '\n')
    .join('');
}

/** The normalized `iptables-save` (4) or `ip6tables-save` (6) of a test namespace. */
export async function savedRules(ns: TestNetns, family: 4 | 6): Promise<string> {
  return normalizeSave(await ns.exec(family === 4 ? 'iptables-save' : 'ip6tables-save', []));
}
