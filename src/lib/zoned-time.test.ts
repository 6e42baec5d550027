import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatInZone, fromWallClock, isTimeZone, wallClock } from './zoned-time.js';

test('an instant read on a zone wall clock, and written back with its offset', () => {
  const t = Date.parse('2024-07-01T13:05:09Z');
  assert.deepEqual(wallClock(t, 'America/New_York'), {
    year: 2024,
    month: 7,
    day: 1,
    hour: 9,
    minute: 5,
    second: 9,
    weekday: 1,
  });
  assert.equal(formatInZone(t, 'America/New_York'), '2024-07-01T09:05:09-04:00');
  assert.equal(formatInZone(t, 'Asia/Kolkata'), '2024-07-01T18:35:09+05:30');
  assert.equal(formatInZone(t, 'UTC'), '2024-07-01T13:05:09Z');
});

test('a wall-clock time becomes its instant: overflow carries, gaps and overlaps resolve as in Go time.Date', () => {
  assert.equal(new Date(fromWallClock('UTC', 2024, 13, 1)).toISOString(), '2025-01-01T00:00:00.000Z');
  // 02:30 does not exist in New York on 2024-03-10; Go's Date gives 01:30 EST.
  assert.equal(
    new Date(fromWallClock('America/New_York', 2024, 3, 10, 2, 30)).toISOString(),
    '2024-03-10T06:30:00.000Z',
  );
  // 01:30 comes twice on 2024-11-03; Go's Date gives the first, in EDT.
  assert.equal(
    new Date(fromWallClock('America/New_York', 2024, 11, 3, 1, 30)).toISOString(),
    '2024-11-03T05:30:00.000Z',
  );
  // Berlin's gap, east of Greenwich: 02:30 on 2024-03-31 gives 03:30 CEST.
  assert.equal(new Date(fromWallClock('Europe/Berlin', 2024, 3, 31, 2, 30)).toISOString(), '2024-03-31T01:30:00.000Z');
});

test('IANA names are time zones; anything else is not', () => {
  assert.ok(isTimeZone('Europe/Paris'));
  assert.ok(!isTimeZone('Mars/Olympus_Mons'));
  assert.ok(!isTimeZone(''));
});
