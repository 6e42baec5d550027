/**
 * Label selectors as the API server parses and matches them: the `labelSelector` query syntax after
 * k8s.io/apimachinery pkg/labels/selector.go (its lexer and recursive-descent parser, `=`, `==`, `!=`, `in`,
 * `notin`, `key`, `!key`, `gt`, `lt`, comma = AND), and a `metav1.LabelSelector` object (`matchLabels`,
 * `matchExpressions`) after pkg/apis/meta/v1/helpers.go LabelSelectorAsSelector. Keys and values are checked
 * with the API's own label formats (validation/formats.ts), and every message is worded as upstream words it, since the
 * list handler returns the parse error verbatim as `400 BadRequest`.
 */
import { ApiError } from './api-error.js';
import { goQuote, goStringSlice } from './go-format.js';
import { isLabelValue, isQualifiedName } from './validation/formats.js';

type Operator = 'in' | 'notin' | '=' | '==' | '!=' | 'exists' | '!' | 'gt' | 'lt';

/** The binary operators in the order upstream lists them in "expected:" messages. */
const BINARY_OPERATORS = ['in', 'notin', '=', '==', '!=', 'gt', 'lt'] as const;

interface Requirement {
  readonly key: string;
  readonly operator: Operator;
  readonly values: readonly string[];
}

/** A parsed selector: every requirement must match (AND). */
export interface LabelSelector {
  /** True when the selector does not restrict anything (an empty string or an empty object). */
  readonly empty: boolean;
  matches(labels: Readonly<Record<string, string>> | undefined): boolean;
  /** The single value the selector requires for `key` (`key=v`, `key==v`, `key in (v)`), if any. */
  requiresExactMatch(key: string): string | undefined;
}

/** A field.Error for an invalid value, printed as `field.Error.Error()` prints it. */
const invalidValue = (path: string, bad: string, detail: string): string => `${path}: Invalid value: ${bad}: ${detail}`;

/** A field.ErrorList as its aggregate prints: one message alone, several in brackets (duplicates dropped). */
function aggregate(errs: readonly string[]): string {
  const unique = [...new Set(errs)];
  return unique.length === 1 ? unique[0]! : `[${unique.join(', ')}]`;
}

/** The parser checks a key before building its requirement, with a nil path (printed `<nil>`). */
function checkParsedKey(key: string): void {
  const errs = isQualifiedName(key);
  if (errs.length > 0) throw new SelectorError(invalidValue('<nil>', goQuote(key), errs.join('; ')));
}

/** NewRequirement: validates the key, the number of values for the operator, and every value. */
function newRequirement(key: string, operator: Operator, values: string[] | undefined): Requirement {
  const errs: string[] = [];
  const keyErrs = isQualifiedName(key);
  if (keyErrs.length > 0) errs.push(invalidValue('key', goQuote(key), keyErrs.join('; ')));
  const vals = values ?? [];
  switch (operator) {
    case 'in':
    case 'notin':
      if (vals.length === 0)
        errs.push(
          invalidValue('values', goStringSlice(values), "for 'in', 'notin' operators, values set can't be empty"),
        );
      break;
    case '=':
    case '==':
    case '!=':
      if (vals.length !== 1)
        errs.push(invalidValue('values', goStringSlice(values), 'exact-match compatibility requires one single value'));
      break;
    case 'exists':
    case '!':
      if (vals.length !== 0)
        errs.push(
          invalidValue('values', goStringSlice(values), 'values set must be empty for exists and does not exist'),
        );
      break;
    case 'gt':
    case 'lt':
      if (vals.length !== 1)
        errs.push(
          invalidValue('values', goStringSlice(values), "for 'Gt', 'Lt' operators, exactly one value is required"),
        );
      vals.forEach((v, i) => {
        if (parseInt64(v) === undefined)
          errs.push(invalidValue(`values[${i}]`, goQuote(v), "for 'Gt', 'Lt' operators, the value must be an integer"));
      });
      break;
  }
  vals.forEach((v, i) => {
    const valueErrs = isLabelValue(v);
    if (valueErrs.length > 0) errs.push(invalidValue(`values[${i}][${key}]`, goQuote(v), valueErrs.join('; ')));
  });
  if (errs.length > 0) throw new SelectorError(aggregate(errs));
  return { key, operator, values: vals };
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** strconv.ParseInt(s, 10, 64): an optional sign and decimal digits, within int64. */
function parseInt64(s: string): bigint | undefined {
  if (!/^[+-]?[0-9]+$/.test(s)) return undefined;
  const n = BigInt(s);
  return n < INT64_MIN || n > INT64_MAX ? undefined : n;
}

/** A parse or validation failure; turned into `400 BadRequest` at the public entry points. */
class SelectorError extends Error {}

// --- lexer --------------------------------------------------------------------------------------------------

type Token =
  | 'error'
  | 'end'
  | 'closedPar'
  | 'comma'
  | 'doesNotExist'
  | 'doubleEquals'
  | 'equals'
  | 'greaterThan'
  | 'identifier'
  | 'in'
  | 'lessThan'
  | 'notEquals'
  | 'notIn'
  | 'openPar';

const LITERAL_TOKENS: ReadonlyMap<string, Token> = new Map<string, Token>([
  [')', 'closedPar'],
  [',', 'comma'],
  ['!', 'doesNotExist'],
  ['==', 'doubleEquals'],
  ['=', 'equals'],
  ['>', 'greaterThan'],
  ['in', 'in'],
  ['<', 'lessThan'],
  ['!=', 'notEquals'],
  ['notin', 'notIn'],
  ['(', 'openPar'],
]);

interface Scanned {
  tok: Token;
  lit: string;
}

const isWhitespace = (ch: string): boolean => ch === ' ' || ch === '\t' || ch === '\r' || ch === '\n';
const isSpecialSymbol = (ch: string): boolean => '=!(),><'.includes(ch);

function lex(s: string): Scanned[] {
  const items: Scanned[] = [];
  let pos = 0;
  for (;;) {
    while (pos < s.length && isWhitespace(s[pos]!)) pos++;
    if (pos >= s.length) {
      items.push({ tok: 'end', lit: '' });
      return items;
    }
    if (isSpecialSymbol(s[pos]!)) {
      // The longest run of special symbols that is still a token ("!=" over "!").
      let buffer = '';
      let last: Scanned | undefined;
      while (pos < s.length && isSpecialSymbol(s[pos]!)) {
        buffer += s[pos]!;
        const tok = LITERAL_TOKENS.get(buffer);
        if (tok !== undefined) last = { tok, lit: buffer };
        else if (last !== undefined) break;
        pos++;
      }
      items.push(last ?? { tok: 'error', lit: `error expected: keyword found '${buffer}'` });
    } else {
      let buffer = '';
      while (pos < s.length && !isSpecialSymbol(s[pos]!) && !isWhitespace(s[pos]!)) buffer += s[pos++]!;
      items.push({ tok: LITERAL_TOKENS.get(buffer) ?? 'identifier', lit: buffer });
    }
  }
}

// --- parser -------------------------------------------------------------------------------------------------

/** In a value context the keywords `in` and `notin` are ordinary identifiers (`x in (in, notin)`). */
type Context = 'keyAndOperator' | 'values';

class Parser {
  private position = 0;
  constructor(private readonly items: Scanned[]) {}

  private lookahead(ctx: Context): Scanned {
    return this.asContext(this.items[this.position]!, ctx);
  }

  private consume(ctx: Context): Scanned {
    return this.asContext(this.items[this.position++]!, ctx);
  }

  private asContext(item: Scanned, ctx: Context): Scanned {
    return ctx === 'values' && (item.tok === 'in' || item.tok === 'notIn')
      ? { tok: 'identifier', lit: item.lit }
      : item;
  }

  parse(): Requirement[] {
    const requirements: Requirement[] = [];
    for (;;) {
      const { tok, lit } = this.lookahead('values');
      if (tok === 'end') return requirements;
      if (tok !== 'identifier' && tok !== 'doesNotExist')
        throw new SelectorError(`found '${lit}', expected: !, identifier, or 'end of string'`);
      let r: Requirement;
      try {
        r = this.parseRequirement();
      } catch (e) {
        if (e instanceof SelectorError) throw new SelectorError(`unable to parse requirement: ${e.message}`);
        throw e;
      }
      requirements.push(r);
      const next = this.consume('values');
      if (next.tok === 'end') return requirements;
      if (next.tok !== 'comma') throw new SelectorError(`found '${next.lit}', expected: ',' or 'end of string'`);
      const after = this.lookahead('values');
      if (after.tok !== 'identifier' && after.tok !== 'doesNotExist')
        throw new SelectorError(`found '${after.lit}', expected: identifier after ','`);
    }
  }

  private parseRequirement(): Requirement {
    const { key, operator } = this.parseKeyAndInferOperator();
    if (operator !== undefined) return newRequirement(key, operator, []);
    const op = this.parseOperator();
    const values = op === 'in' || op === 'notin' ? this.parseValues() : this.parseExactValue();
    // sets.String.List(): the values deduplicated and sorted.
    return newRequirement(key, op, [...new Set(values)].sort());
  }

  private parseKeyAndInferOperator(): { key: string; operator: Operator | undefined } {
    let operator: Operator | undefined;
    let item = this.consume('values');
    if (item.tok === 'doesNotExist') {
      operator = '!';
      item = this.consume('values');
    }
    if (item.tok !== 'identifier') throw new SelectorError(`found '${item.lit}', expected: identifier`);
    checkParsedKey(item.lit);
    const next = this.lookahead('values').tok;
    if ((next === 'end' || next === 'comma') && operator === undefined) operator = 'exists';
    return { key: item.lit, operator };
  }

  private parseOperator(): Operator {
    const { tok, lit } = this.consume('keyAndOperator');
    switch (tok) {
      case 'in':
        return 'in';
      case 'equals':
        return '=';
      case 'doubleEquals':
        return '==';
      case 'greaterThan':
        return 'gt';
      case 'lessThan':
        return 'lt';
      case 'notIn':
        return 'notin';
      case 'notEquals':
        return '!=';
      default:
        throw new SelectorError(`found '${lit}', expected: ${BINARY_OPERATORS.join(', ')}`);
    }
  }

  private parseValues(): string[] {
    const open = this.consume('values');
    if (open.tok !== 'openPar') throw new SelectorError(`found '${open.lit}' expected: '('`);
    const { tok, lit } = this.lookahead('values');
    if (tok === 'identifier' || tok === 'comma') {
      const values = this.parseIdentifiersList();
      if (this.consume('values').tok !== 'closedPar') throw new SelectorError(`found '${lit}', expected: ')'`);
      return values;
    }
    if (tok === 'closedPar') {
      this.consume('values');
      return [''];
    }
    throw new SelectorError(`found '${lit}', expected: ',', ')' or identifier`);
  }

  /** A possibly empty, comma-separated list of possibly empty identifiers: `(a,,b)`, `(,a)`, `(a,)`. */
  private parseIdentifiersList(): string[] {
    const values = new Set<string>();
    for (;;) {
      const { tok, lit } = this.consume('values');
      if (tok === 'identifier') {
        values.add(lit);
        const next = this.lookahead('values');
        if (next.tok === 'comma') continue;
        if (next.tok === 'closedPar') return [...values];
        throw new SelectorError(`found '${next.lit}', expected: ',' or ')'`);
      }
      if (tok !== 'comma') throw new SelectorError(`found '${lit}', expected: ',', or identifier`);
      if (values.size === 0) values.add('');
      const next = this.lookahead('values').tok;
      if (next === 'closedPar') {
        values.add('');
        return [...values];
      }
      if (next === 'comma') values.add('');
    }
  }

  private parseExactValue(): string[] {
    const next = this.lookahead('values').tok;
    if (next === 'end' || next === 'comma') return [''];
    const { tok, lit } = this.consume('values');
    if (tok === 'identifier') return [lit];
    throw new SelectorError(`found '${lit}', expected: identifier`);
  }
}

// --- matching -----------------------------------------------------------------------------------------------

function requirementMatches(r: Requirement, labels: Readonly<Record<string, string>>): boolean {
  const has = Object.hasOwn(labels, r.key);
  const value = has ? labels[r.key]! : undefined;
  switch (r.operator) {
    case 'in':
    case '=':
    case '==':
      return value !== undefined && r.values.includes(value);
    case 'notin':
    case '!=':
      return value === undefined || !r.values.includes(value);
    case 'exists':
      return has;
    case '!':
      return !has;
    case 'gt':
    case 'lt': {
      if (value === undefined || r.values.length !== 1) return false;
      const actual = parseInt64(value);
      const bound = parseInt64(r.values[0]!);
      if (actual === undefined || bound === undefined) return false;
      return r.operator === 'gt' ? actual > bound : actual < bound;
    }
  }
}

function selectorOf(requirements: readonly Requirement[]): LabelSelector {
  return Object.freeze({
    empty: requirements.length === 0,
    matches: (labels: Readonly<Record<string, string>> | undefined) =>
      requirements.every((r) => requirementMatches(r, labels ?? {})),
    requiresExactMatch(key: string): string | undefined {
      const r = requirements.find((x) => x.key === key);
      if (
        r === undefined ||
        !(r.operator === '=' || r.operator === '==' || r.operator === 'in') ||
        r.values.length !== 1
      )
        return undefined;
      return r.values[0];
    },
  });
}

const NOTHING: LabelSelector = Object.freeze({
  empty: false,
  matches: () => false,
  requiresExactMatch: () => undefined,
});

function asBadRequest<T>(fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    if (e instanceof SelectorError) throw new ApiError('BadRequest', e.message);
    throw e;
  }
}

/** Parses the `labelSelector` query parameter; a malformed selector is `400 BadRequest` worded as upstream. */
export function parseLabelSelector(s: string): LabelSelector {
  return asBadRequest(() => selectorOf(new Parser(lex(s)).parse()));
}

/** `metav1.LabelSelectorRequirement`. */
export interface LabelSelectorRequirement {
  key: string;
  operator: string;
  values?: string[];
}

/** `metav1.LabelSelector`, as Deployments, ReplicaSets, Jobs and policies carry it. */
export interface LabelSelectorObject {
  matchLabels?: Record<string, string>;
  matchExpressions?: LabelSelectorRequirement[];
}

const EXPRESSION_OPERATORS: Readonly<Record<string, Operator>> = {
  In: 'in',
  NotIn: 'notin',
  Exists: 'exists',
  DoesNotExist: '!',
};

/**
 * The selector a `metav1.LabelSelector` stands for: absent (null) selects nothing, an empty one everything.
 * An invalid key, value or operator is `400 BadRequest` with upstream's wording.
 */
export function labelSelectorFromObject(sel: LabelSelectorObject | null | undefined): LabelSelector {
  if (sel === null || sel === undefined) return NOTHING;
  return asBadRequest(() => {
    const requirements = Object.entries(sel.matchLabels ?? {}).map(([k, v]) => newRequirement(k, '=', [v]));
    for (const expr of sel.matchExpressions ?? []) {
      const op = Object.hasOwn(EXPRESSION_OPERATORS, expr.operator) ? EXPRESSION_OPERATORS[expr.operator] : undefined;
      if (op === undefined) throw new SelectorError(`${goQuote(expr.operator)} is not a valid pod selector operator`);
      requirements.push(
        newRequirement(
          expr.key,
          op,
          expr.values !== undefined && expr.values.length > 0 ? [...expr.values] : undefined,
        ),
      );
    }
    return selectorOf(requirements);
  });
}
