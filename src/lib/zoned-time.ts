/**
 * Wall-clock time in an IANA time zone, through Intl, as Go's `time` package gives it to Kubernetes' CronJob
 * controller: the fields of an instant in a zone (`Time.In(loc)`), and the instant of a wall-clock time
 * (`time.Date(..., loc)`), fields out of range carrying over as Go normalises them and a time in a daylight-saving gap
 * or overlap resolved as Go's Date resolves it: the zone offset in force at the wall time read as UTC, or, when that
 * offset does not hold at the instant it gives, the offset in force there.
 */

export interface WallClock {
  readonly year: number;
  /** 1 to 12. */
  readonly month: number;
  readonly day: number;
  readonly hour: number;
  readonly minute: number;
  readonly second: number;
  /** 0 (Sunday) to 6. */
  readonly weekday: number;
}

const formats = new Map<string, Intl.DateTimeFormat>();

function formatFor(zone: string): Intl.DateTimeFormat {
  let f = formats.get(zone);
  if (f === undefined) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formats.set(zone, f);
  }
  return f;
}

/** Whether Intl knows `zone` as an IANA time zone name (`time.LoadLocation` succeeding). */
export function isTimeZone(zone: string): boolean {
  if (zone === '') return false;
  try {
    formatFor(zone);
    return true;
  } catch {
    return false;
  }
}

/** The process's own zone (Go's `time.Local`): `TZ`, else the system's. */
export function localTimeZone(): string {
  return new Intl.DateTimeFormat().resolvedOptions().timeZone;
}

export function wallClock(ms: number, zone: string): WallClock {
  const parts: Record<string, number> = {};
  for (const p of formatFor(zone).formatToParts(ms)) if (p.type !== 'literal') parts[p.type] = Number(p.value);
  const year = parts.year!;
  const month = parts.month!;
  const day = parts.day!;
  return {
    year,
    month,
    day,
    hour: parts.hour!,
    minute: parts.minute!,
    second: parts.second!,
    weekday: new Date(Date.UTC(year, month - 1, day)).getUTCDay(),
  };
}

/** The zone's offset from UTC at `ms`, in milliseconds (positive east of Greenwich). */
function offsetAt(ms: number, zone: string): number {
  const w = wallClock(ms, zone);
  const whole = ms - (((ms % 1000) + 1000) % 1000);
  return Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second) - whole;
}

/** The instant of a wall-clock time in `zone`; fields out of range carry over (month 13 is next January). */
export function fromWallClock(
  zone: string,
  year: number,
  month: number,
  day: number,
  hour = 0,
  minute = 0,
  second = 0,
): number {
  const asUtc = Date.UTC(year, month - 1, day, hour, minute, second);
  const guess = offsetAt(asUtc, zone);
  const there = offsetAt(asUtc - guess, zone);
  return asUtc - there;
}

const pad = (n: number, width = 2): string => String(Math.abs(n)).padStart(width, '0');

/** RFC 3339 in whole seconds with the zone's offset (Go's `t.In(loc).Format(time.RFC3339)`), `Z` for UTC. */
export function formatInZone(ms: number, zone: string): string {
  const w = wallClock(ms, zone);
  const offsetMinutes = Math.round(offsetAt(ms, zone) / 60_000);
  const sign = offsetMinutes < 0 ? '-' : '+';
  const offset = offsetMinutes === 0 ? 'Z' : `${sign}${pad(Math.trunc(offsetMinutes / 60))}:${pad(offsetMinutes % 60)}`;
  return `${pad(w.year, 4)}-${pad(w.month)}-${pad(w.day)}T${pad(w.hour)}:${pad(w.minute)}:${pad(w.second)}${offset}`;
}
