import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseCronSchedule, type CronSchedule } from './cron-schedule.js';

const at = (iso: string): number => Date.parse(iso);
const iso = (ms: number | undefined): string | undefined => (ms === undefined ? undefined : new Date(ms).toISOString());

function schedule(spec: string, zone = 'UTC'): CronSchedule {
  const parsed = parseCronSchedule(spec, zone);
  if ('error' in parsed) assert.fail(`${spec}: ${parsed.error}`);
  return parsed.schedule;
}

/** The next `n` runs after `from`, as UTC ISO strings. */
function runs(spec: string, from: string, n: number, zone = 'UTC'): (string | undefined)[] {
  const s = schedule(spec, zone);
  const out: (string | undefined)[] = [];
  let t: number | undefined = at(from);
  for (let i = 0; i < n && t !== undefined; i++) {
    t = s.next(t);
    out.push(iso(t));
  }
  return out;
}

test('ranges, steps, lists and names: every quarter hour of office hours on weekdays', () => {
  assert.deepEqual(runs('*/15 9-17 * * mon-fri', '2024-03-08T17:40:00Z', 3), [
    '2024-03-08T17:45:00.000Z',
    '2024-03-11T09:00:00.000Z',
    '2024-03-11T09:15:00.000Z',
  ]);
  assert.deepEqual(runs('0 12 1,15 JAN,jul *', '2024-01-20T00:00:00Z', 2), [
    '2024-07-01T12:00:00.000Z',
    '2024-07-15T12:00:00.000Z',
  ]);
  assert.deepEqual(runs('5/20 0 1 1 *', '2024-01-01T00:00:00Z', 3), [
    '2024-01-01T00:05:00.000Z',
    '2024-01-01T00:25:00.000Z',
    '2024-01-01T00:45:00.000Z',
  ]);
});

test('the next run is strictly after the time given, on a whole minute', () => {
  assert.deepEqual(runs('* * * * *', '2024-01-01T10:00:00Z', 1), ['2024-01-01T10:01:00.000Z']);
  assert.deepEqual(runs('* * * * *', '2024-01-01T10:00:59.500Z', 1), ['2024-01-01T10:01:00.000Z']);
});

test('day of month and day of week: either matches when both are restricted, both must when one is *', () => {
  // 2024-09-06 is a Friday, the 13th is a Friday too.
  assert.deepEqual(runs('0 0 13 * 5', '2024-09-01T00:00:00Z', 3), [
    '2024-09-06T00:00:00.000Z',
    '2024-09-13T00:00:00.000Z',
    '2024-09-20T00:00:00.000Z',
  ]);
  assert.deepEqual(runs('0 0 13 * *', '2024-09-01T00:00:00Z', 1), ['2024-09-13T00:00:00.000Z']);
  assert.deepEqual(runs('0 0 * * 5', '2024-09-01T00:00:00Z', 1), ['2024-09-06T00:00:00.000Z']);
  // A step of 2 is a restriction; a step of 1 is still *.
  assert.deepEqual(runs('0 0 */2 * 5', '2024-09-01T00:00:00Z', 2), [
    '2024-09-03T00:00:00.000Z',
    '2024-09-05T00:00:00.000Z',
  ]);
  assert.deepEqual(runs('0 0 */1 * 5', '2024-09-01T00:00:00Z', 1), ['2024-09-06T00:00:00.000Z']);
});

test('the descriptors are their five-field schedules, and @every adds its duration', () => {
  const from = '2024-05-15T10:30:00Z';
  assert.deepEqual(
    ['@hourly', '@daily', '@midnight', '@weekly', '@monthly', '@yearly', '@annually'].map((d) => runs(d, from, 1)[0]),
    [
      '2024-05-15T11:00:00.000Z',
      '2024-05-16T00:00:00.000Z',
      '2024-05-16T00:00:00.000Z',
      '2024-05-19T00:00:00.000Z',
      '2024-06-01T00:00:00.000Z',
      '2025-01-01T00:00:00.000Z',
      '2025-01-01T00:00:00.000Z',
    ],
  );
  assert.deepEqual(runs('@every 1m30s', '2024-05-15T10:30:00.250Z', 2), [
    '2024-05-15T10:31:30.000Z',
    '2024-05-15T10:33:00.000Z',
  ]);
});

test('a schedule with no run within five years has no next time', () => {
  assert.deepEqual(runs('0 0 30 2 *', '2024-01-01T00:00:00Z', 1), [undefined]);
});

test('the schedule is read on the wall clock of its time zone', () => {
  assert.deepEqual(runs('0 9 * * *', '2024-01-01T00:00:00Z', 1, 'Asia/Kolkata'), ['2024-01-01T03:30:00.000Z']);
  assert.deepEqual(runs('0 9 * * *', '2024-01-01T00:00:00Z', 1, 'America/New_York'), ['2024-01-01T14:00:00.000Z']);
  // Summer time: 09:00 in New York is 13:00 UTC.
  assert.deepEqual(runs('0 9 * * *', '2024-07-01T00:00:00Z', 1, 'America/New_York'), ['2024-07-01T13:00:00.000Z']);
});

test('daylight saving: a time in the spring-forward gap is skipped that day, one in the repeated hour runs twice', () => {
  // New York, 2024-03-10: 02:00 EST becomes 03:00 EDT, so there is no 02:30.
  assert.deepEqual(runs('30 2 * * *', '2024-03-09T08:00:00Z', 2, 'America/New_York'), [
    '2024-03-11T06:30:00.000Z',
    '2024-03-12T06:30:00.000Z',
  ]);
  // A daily midnight stays at midnight on both sides of the change.
  assert.deepEqual(runs('0 0 * * *', '2024-03-09T06:00:00Z', 2, 'America/New_York'), [
    '2024-03-10T05:00:00.000Z',
    '2024-03-11T04:00:00.000Z',
  ]);
  // 2024-11-03: 02:00 EDT becomes 01:00 EST, so 01:30 comes once in EDT and once in EST.
  assert.deepEqual(runs('30 1 * * *', '2024-11-03T04:00:00Z', 3, 'America/New_York'), [
    '2024-11-03T05:30:00.000Z',
    '2024-11-03T06:30:00.000Z',
    '2024-11-04T06:30:00.000Z',
  ]);
  // Berlin, east of Greenwich: 2024-03-31 02:00 CET becomes 03:00 CEST.
  assert.deepEqual(runs('0 * * * *', '2024-03-31T00:30:00Z', 2, 'Europe/Berlin'), [
    '2024-03-31T01:00:00.000Z',
    '2024-03-31T02:00:00.000Z',
  ]);
});

test("invalid schedules are refused with robfig/cron's messages", () => {
  const error = (spec: string): string | undefined => {
    const p = parseCronSchedule(spec, 'UTC');
    return 'error' in p ? p.error : undefined;
  };
  assert.equal(error('* * * *'), 'expected exactly 5 fields, found 4: [* * * *]');
  assert.equal(error('60 * * * *'), 'end of range (60) above maximum (59): 60');
  assert.equal(error('* * 0 * *'), 'beginning of range (0) below minimum (1): 0');
  assert.equal(error('5-1 * * * *'), 'beginning of range (5) beyond end of range (1): 5-1');
  assert.equal(error('*/0 * * * *'), 'step of range should be a positive number: */0');
  assert.equal(error('1-2-3 * * * *'), 'too many hyphens: 1-2-3');
  assert.equal(error('* * * * 7'), 'end of range (7) above maximum (6): 7');
  assert.match(error('* * * foo *') ?? '', /^failed to parse int from foo/);
  assert.equal(error('@fortnightly'), 'unrecognized descriptor: @fortnightly');
  assert.equal(error(''), 'empty spec string');
});
