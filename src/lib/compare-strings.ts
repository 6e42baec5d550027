/**
 * Orders strings by UTF-16 code unit, as Go's `sort.Strings` and `strings.Compare` order ASCII keys. Used instead
 * of `localeCompare` where the order must not depend on the locale, and in the data-path processes, where loading
 * ICU's collation data would add to an idle ztunnel's memory (docs/performance.md).
 */
export function compareStrings(a: string, b: string): number {
  if (a < b) return -1;
  return a > b ? 1 : 0;
}
