/**
 * Go's fmt verbs as Kubernetes' error messages use them, so that our messages read as the real API server's:
 * `%q` (strconv.Quote), `%v` of decoded JSON (`map[a:1 b:[x y]]`, keys sorted as fmt prints maps), `%#v` of a
 * `[]string`, and the Go type names that k8s.io/apimachinery pkg/util/mergepatch errors.go prints with `%s` of a
 * `reflect.Type`. Written by hand because no npm package reproduces Go's formatting.
 */

const GO_ESCAPES: Readonly<Record<string, string>> = {
  '"': '\\"',
  '\\': '\\\\',
  '\x07': '\\a',
  '\b': '\\b',
  '\f': '\\f',
  '\n': '\\n',
  '\r': '\\r',
  '\t': '\\t',
  '\v': '\\v',
};

/** `%q` of a string: double-quoted with Go escapes; printable runes stay as they are. */
export function goQuote(s: string): string {
  let out = '"';
  for (const ch of s) {
    const escaped = GO_ESCAPES[ch];
    if (escaped !== undefined) out += escaped;
    else {
      const cp = ch.codePointAt(0)!;
      out += cp < 0x20 || cp === 0x7f ? `\\x${cp.toString(16).padStart(2, '0')}` : ch;
    }
  }
  return out + '"';
}

/** `%#v` of a `[]string` (a nil slice prints as `[]string(nil)`). */
export function goStringSlice(values: readonly string[] | undefined): string {
  return values === undefined ? '[]string(nil)' : `[]string{${values.map(goQuote).join(', ')}}`;
}

/** `%v` of a value decoded from JSON into `interface{}`. */
export function goValue(v: unknown): string {
  if (v === null || v === undefined) return '<nil>';
  if (Array.isArray(v)) return `[${v.map(goValue).join(' ')}]`;
  if (typeof v === 'object') {
    const m = v as Record<string, unknown>;
    return `map[${Object.keys(m)
      .sort()
      .map((k) => `${k}:${goValue(m[k])}`)
      .join(' ')}]`;
  }
  return typeof v === 'string' ? v : JSON.stringify(v);
}

/** The Go type JSON decodes `v` into (`UnmarshalCaseSensitivePreserveInts`: whole numbers are int64). */
export type GoType = 'map[string]interface {}' | '[]interface {}' | 'string' | 'int64' | 'float64' | 'bool' | '<nil>';

export function goTypeOf(v: unknown): GoType {
  if (v === null || v === undefined) return '<nil>';
  if (Array.isArray(v)) return '[]interface {}';
  switch (typeof v) {
    case 'object':
      return 'map[string]interface {}';
    case 'string':
      return 'string';
    case 'number':
      return Number.isInteger(v) ? 'int64' : 'float64';
    default:
      return 'bool';
  }
}

/** The JSON kind encoding/json names in "json: cannot unmarshal X into Go value of type T". */
export function goJsonKind(v: unknown): 'array' | 'object' | 'string' | 'number' | 'bool' {
  if (Array.isArray(v)) return 'array';
  switch (typeof v) {
    case 'string':
      return 'string';
    case 'number':
      return 'number';
    case 'boolean':
      return 'bool';
    default:
      return 'object';
  }
}
