import { stringify } from 'yaml';

export type OutputFormat = 'table' | 'json' | 'yaml';

/** Renders rows as an aligned table (the default), or JSON / YAML for `-o json|yaml`. */
export function render(
  format: OutputFormat,
  headers: readonly string[],
  rows: readonly (readonly string[])[],
  raw: unknown,
): string {
  if (format === 'json') return JSON.stringify(raw, null, 2) + '\n';
  if (format === 'yaml') return stringify(raw);
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]): string =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(headers), ...rows.map(line)].join('\n') + '\n';
}
