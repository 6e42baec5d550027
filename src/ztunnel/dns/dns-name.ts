/**
 * DNS names as label lists (ztunnel `src/dns/name_util.rs`). A name is compared label by label, case-insensitively
 * (RFC 4343): `labelsOf` lowercases, so two label lists are equal exactly when the names are. The root and the
 * empty name have no labels; a trailing dot is the root and adds none.
 */
export type Labels = readonly string[];

export function labelsOf(name: string): Labels {
  const n = name.endsWith('.') ? name.slice(0, -1) : name;
  return n === '' ? [] : n.toLowerCase().split('.');
}

export function nameOf(labels: Labels): string {
  return labels.join('.');
}

/** Whether `name` ends with the labels of `domain` and has more labels than it; never for a wildcard domain. */
export function hasDomain(name: Labels, domain: Labels): boolean {
  if (domain[0] === '*' || name.length <= domain.length) return false;
  const skip = name.length - domain.length;
  return domain.every((label, i) => name[skip + i] === label);
}

/** `name` without the labels of `domain`, or undefined when it does not end with them (or nothing would be left). */
export function trimDomain(name: Labels, domain: Labels): Labels | undefined {
  return hasDomain(name, domain) ? name.slice(0, name.length - domain.length) : undefined;
}

/**
 * The names to try for `name`, most specific first: itself, then each wildcard that covers it
 * (`a.b.c`: `a.b.c`, `*.b.c`, `*.c`), as ztunnel's `get_wildcards`.
 */
export function wildcardsOf(name: Labels): Labels[] {
  const out: Labels[] = [name];
  for (let i = 0; name.length - i > 1; i++) out.push(['*', ...name.slice(i + 1)]);
  return out;
}
