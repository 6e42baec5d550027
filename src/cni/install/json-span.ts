/**
 * Where values sit in a JSON text, so that the installer can change one element of a network config's `plugins`
 * list by splicing the text and leave every other byte of the file as its author (or another CNI's agent) wrote it:
 * key order, spacing, number spellings that a parse and re-serialisation would change. The text must already be
 * valid JSON (the caller parses it first); this only finds boundaries, without recursion, so nesting depth is no
 * limit.
 */

/** A value's text is `text.slice(start, end)`. */
export interface Span {
  readonly start: number;
  readonly end: number;
}

export interface Member {
  /** The decoded key. */
  readonly key: string;
  readonly value: Span;
}

const isSpace = (c: string | undefined): boolean => c === ' ' || c === '\t' || c === '\n' || c === '\r';

function skipSpace(text: string, i: number): number {
  while (isSpace(text[i])) i++;
  return i;
}

/** The end of the string starting at `i` (its opening quote). */
function stringEnd(text: string, i: number): number {
  i++;
  while (text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
  return i + 1;
}

/** The end of the value starting at `i`. */
function valueEnd(text: string, i: number): number {
  const first = text[i];
  if (first === '"') return stringEnd(text, i);
  if (first !== '{' && first !== '[') {
    while (i < text.length && !isSpace(text[i]) && text[i] !== ',' && text[i] !== ']' && text[i] !== '}') i++;
    return i;
  }
  let depth = 0;
  do {
    const c = text[i];
    if (c === '"') {
      i = stringEnd(text, i);
      continue;
    }
    if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') depth--;
    i++;
  } while (depth > 0);
  return i;
}

/** The span of the whole document's value. */
export function rootSpan(text: string): Span {
  const start = skipSpace(text, 0);
  return { start, end: valueEnd(text, start) };
}

/** The entries of the object or array at `span`, in order: each entry's key span (objects) and value span. */
function entries(text: string, span: Span, keyed: boolean): { key?: Span; value: Span }[] {
  const out: { key?: Span; value: Span }[] = [];
  let i = skipSpace(text, span.start + 1);
  if (i === span.end - 1) return out;
  for (;;) {
    let key: Span | undefined;
    if (keyed) {
      key = { start: i, end: stringEnd(text, i) };
      i = skipSpace(text, skipSpace(text, key.end) + 1);
    }
    const value = { start: i, end: valueEnd(text, i) };
    out.push(key === undefined ? { value } : { key, value });
    i = skipSpace(text, value.end);
    if (text[i] !== ',') return out;
    i = skipSpace(text, i + 1);
  }
}

/** The members of the object at `span`, in the order written (a repeated key appears each time). */
export function objectMembers(text: string, span: Span): Member[] {
  return entries(text, span, true).map(({ key, value }) => ({
    key: JSON.parse(text.slice(key!.start, key!.end)) as string,
    value,
  }));
}

/** The elements of the array at `span`, in order. */
export function arrayElements(text: string, span: Span): Span[] {
  return entries(text, span, false).map((e) => e.value);
}
