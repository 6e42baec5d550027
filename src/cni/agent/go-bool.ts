/** Go's strconv.ParseBool, which Istio reads its boolean env vars and annotations with; undefined when `v` is none of its spellings. */
export function parseGoBool(v: string): boolean | undefined {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(v)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(v)) return false;
  return undefined;
}
