/**
 * A CronJob's `schedule`, parsed and stepped as Kubernetes' CronJob controller does with robfig/cron v3
 * (`cron.ParseStandard`, `SpecSchedule.Next`, `ConstantDelaySchedule`): five fields (minute, hour, day of month,
 * month, day of week) of numbers, `*` or `?`, ranges `a-b`, steps `/n`, lists `a,b`, month and weekday names; the
 * descriptors `@yearly`, `@annually`, `@monthly`, `@weekly`, `@daily`, `@midnight`, `@hourly` and `@every <duration>`.
 *
 * Written here rather than taken from npm because the controller must pick the same times as Kubernetes where cron
 * implementations differ: day of month and day of week match either one unless one of them is `*` (or a `*` step
 * of 1); times are stepped on the zone's wall clock the way robfig/cron steps Go's `time.Time`, so a time inside a
 * spring-forward gap is skipped that day, a time in a fall-back's repeated hour comes twice, and nothing is found
 * past five years ahead. The error messages are robfig/cron's.
 */
import { fromWallClock, wallClock } from './zoned-time.js';

const SECOND_MS = 1000;
const MINUTE_MS = 60_000;
const HOUR_MS = 3_600_000;

interface Bounds {
  readonly min: number;
  readonly max: number;
  readonly names?: Readonly<Record<string, number>>;
}

const MONTH_NAMES = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const DAY_NAMES = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];
const FIELDS: readonly Bounds[] = [
  { min: 0, max: 59 },
  { min: 0, max: 23 },
  { min: 1, max: 31 },
  { min: 1, max: 12, names: Object.fromEntries(MONTH_NAMES.map((n, i) => [n, i + 1])) },
  { min: 0, max: 6, names: Object.fromEntries(DAY_NAMES.map((n, i) => [n, i])) },
];

const DESCRIPTORS: Readonly<Record<string, string>> = {
  '@yearly': '0 0 1 1 *',
  '@annually': '0 0 1 1 *',
  '@monthly': '0 0 1 * *',
  '@weekly': '0 0 * * 0',
  '@daily': '0 0 * * *',
  '@midnight': '0 0 * * *',
  '@hourly': '0 * * * *',
};

const GO_DURATION_UNITS: Readonly<Record<string, number>> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  ms: 1,
  s: SECOND_MS,
  m: MINUTE_MS,
  h: HOUR_MS,
};

export interface CronSchedule {
  /** The first scheduled instant strictly after `ms` (whole seconds), or undefined when none comes within 5 years. */
  next(ms: number): number | undefined;
}

export type ParsedCronSchedule = { readonly schedule: CronSchedule } | { readonly error: string };

/** One field's allowed values, and whether it was written as `*` (which decides how the two day fields combine). */
interface Field {
  readonly values: ReadonlySet<number>;
  readonly star: boolean;
}

function parseNumber(expr: string): number | string {
  if (!/^[+-]?\d+$/.test(expr))
    return `failed to parse int from ${expr}: strconv.Atoi: parsing "${expr}": invalid syntax`;
  const n = Number(expr);
  return n < 0 ? `negative number (${n}) not allowed: ${expr}` : n;
}

function parseValue(expr: string, bounds: Bounds): number | string {
  return bounds.names?.[expr.toLowerCase()] ?? parseNumber(expr);
}

/** One comma-separated part of a field (robfig/cron `getRange`). */
function parseRange(expr: string, bounds: Bounds, into: Set<number>): boolean | string {
  const rangeAndStep = expr.split('/');
  const lowAndHigh = rangeAndStep[0]!.split('-');
  let start: number;
  let end: number;
  let star = false;
  if (lowAndHigh[0] === '*' || lowAndHigh[0] === '?') {
    start = bounds.min;
    end = bounds.max;
    star = true;
  } else {
    if (lowAndHigh.length > 2) return `too many hyphens: ${expr}`;
    const low = parseValue(lowAndHigh[0]!, bounds);
    if (typeof low === 'string') return low;
    const high = lowAndHigh.length === 2 ? parseValue(lowAndHigh[1]!, bounds) : low;
    if (typeof high === 'string') return high;
    start = low;
    end = high;
  }
  let step = 1;
  if (rangeAndStep.length > 2) return `too many slashes: ${expr}`;
  if (rangeAndStep.length === 2) {
    const s = parseNumber(rangeAndStep[1]!);
    if (typeof s === 'string') return s;
    step = s;
    // `N/step` means `N-max/step`.
    if (lowAndHigh.length === 1) end = bounds.max;
    if (step > 1) star = false;
  }
  if (start < bounds.min) return `beginning of range (${start}) below minimum (${bounds.min}): ${expr}`;
  if (end > bounds.max) return `end of range (${end}) above maximum (${bounds.max}): ${expr}`;
  if (start > end) return `beginning of range (${start}) beyond end of range (${end}): ${expr}`;
  if (step === 0) return `step of range should be a positive number: ${expr}`;
  for (let v = start; v <= end; v += step) into.add(v);
  return star;
}

function parseField(field: string, bounds: Bounds): Field | string {
  const values = new Set<number>();
  let star = false;
  for (const part of field.split(',').filter((p) => p !== '')) {
    const r = parseRange(part, bounds, values);
    if (typeof r === 'string') return r;
    star ||= r;
  }
  return { values, star };
}

/** robfig/cron's `SpecSchedule.Next`, on the wall clock of `zone`. */
class SpecSchedule implements CronSchedule {
  constructor(
    private readonly fields: readonly Field[],
    private readonly zone: string,
  ) {}

  private dayMatches(day: number, weekday: number): boolean {
    const dom = this.fields[2]!;
    const dow = this.fields[4]!;
    const domMatch = dom.values.has(day);
    const dowMatch = dow.values.has(weekday);
    return dom.star || dow.star ? domMatch && dowMatch : domMatch || dowMatch;
  }

  next(ms: number): number | undefined {
    const [minutes, hours, , months] = this.fields as [Field, Field, Field, Field, Field];
    const zone = this.zone;
    let t = Math.floor(ms / SECOND_MS) * SECOND_MS + SECOND_MS;
    let c = wallClock(t, zone);
    const at = (next: number): void => {
      t = next;
      c = wallClock(t, zone);
    };
    let added = false;
    const yearLimit = c.year + 5;
    wrap: for (;;) {
      if (c.year > yearLimit) return undefined;
      while (!months.values.has(c.month)) {
        if (!added) {
          added = true;
          at(fromWallClock(zone, c.year, c.month, 1));
        }
        at(fromWallClock(zone, c.year, c.month + 1, c.day, c.hour, c.minute, c.second));
        if (c.month === 1) continue wrap;
      }
      while (!this.dayMatches(c.day, c.weekday)) {
        if (!added) {
          added = true;
          at(fromWallClock(zone, c.year, c.month, c.day));
        }
        at(fromWallClock(zone, c.year, c.month, c.day + 1, c.hour, c.minute, c.second));
        // Back to midnight when a daylight-saving change moved the hour.
        if (c.hour !== 0) at(t + (c.hour > 12 ? 24 - c.hour : -c.hour) * HOUR_MS);
        if (c.day === 1) continue wrap;
      }
      while (!hours.values.has(c.hour)) {
        if (!added) {
          added = true;
          at(fromWallClock(zone, c.year, c.month, c.day, c.hour));
        }
        at(t + HOUR_MS);
        if (c.hour === 0) continue wrap;
      }
      while (!minutes.values.has(c.minute)) {
        if (!added) {
          added = true;
          at(t - (t % MINUTE_MS));
        }
        at(t + MINUTE_MS);
        if (c.minute === 0) continue wrap;
      }
      // The standard parser's seconds field is 0: on to the next whole minute, which starts the checks over.
      if (c.second !== 0) {
        added = true;
        at(t + (60 - c.second) * SECOND_MS);
        continue;
      }
      return t;
    }
  }
}

/** `@every <duration>`: the duration (at least 1 s, whole seconds) after each run (`ConstantDelaySchedule`). */
function everySchedule(duration: string): CronSchedule | string {
  const re = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)/y;
  let total = 0;
  let m: RegExpExecArray | null;
  let consumed = 0;
  while ((m = re.exec(duration)) !== null) {
    total += Number(m[1]) * GO_DURATION_UNITS[m[2]!]!;
    consumed = re.lastIndex;
  }
  if (duration === '' || consumed !== duration.length)
    return `failed to parse duration @every ${duration}: time: invalid duration "${duration}"`;
  const delay = Math.max(SECOND_MS, Math.floor(total / SECOND_MS) * SECOND_MS);
  return { next: (ms) => Math.floor(ms / SECOND_MS) * SECOND_MS + delay };
}

/** Parses `spec` for the wall clock of the IANA zone `zone`. */
export function parseCronSchedule(spec: string, zone: string): ParsedCronSchedule {
  if (spec === '') return { error: 'empty spec string' };
  const trimmed = spec.trim();
  if (trimmed.startsWith('@every ')) {
    const s = everySchedule(trimmed.slice('@every '.length).trim());
    return typeof s === 'string' ? { error: s } : { schedule: s };
  }
  let text = trimmed;
  if (trimmed.startsWith('@')) {
    const expanded = DESCRIPTORS[trimmed];
    if (expanded === undefined) return { error: `unrecognized descriptor: ${trimmed}` };
    text = expanded;
  }
  const parts = text.split(/\s+/).filter((f) => f !== '');
  if (parts.length !== FIELDS.length)
    return { error: `expected exactly 5 fields, found ${parts.length}: [${parts.join(' ')}]` };
  const fields: Field[] = [];
  for (const [i, part] of parts.entries()) {
    const f = parseField(part, FIELDS[i]!);
    if (typeof f === 'string') return { error: f };
    fields.push(f);
  }
  return { schedule: new SpecSchedule(fields, zone) };
}
