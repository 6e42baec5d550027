import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { V1CronJob, V1Job } from '@kubernetes/client-node';
import { parseCronSchedule, type CronSchedule } from '../lib/cron-schedule.js';
import {
  jobForSchedule,
  jobsBeyondHistory,
  MANY_MISSED,
  mostRecentScheduleTime,
  nextRunDelay,
} from './cron-job-runs.js';

const at = (iso: string): number => Date.parse(iso);
const iso = (ms: number | undefined): string | undefined => (ms === undefined ? undefined : new Date(ms).toISOString());

function schedule(spec: string, zone = 'UTC'): CronSchedule {
  const p = parseCronSchedule(spec, zone);
  if ('error' in p) assert.fail(p.error);
  return p.schedule;
}

function cronJob(spec: Partial<NonNullable<V1CronJob['spec']>>, status: V1CronJob['status'] = {}): V1CronJob {
  return {
    metadata: {
      name: 'hello',
      namespace: 'ns',
      uid: 'cj1',
      creationTimestamp: '2024-05-01T10:00:30Z' as unknown as Date,
    },
    spec: { schedule: '*/5 * * * *', jobTemplate: { spec: { template: {} } }, ...spec },
    status,
  };
}

test('the most recent unmet time is the latest scheduled time since creation or the last run', () => {
  const s = schedule('*/5 * * * *');
  assert.deepEqual(mostRecentScheduleTime(cronJob({}), s, at('2024-05-01T10:17:00Z'), true), {
    time: at('2024-05-01T10:15:00Z'),
    missed: 3,
  });
  const ran = cronJob({}, { lastScheduleTime: '2024-05-01T10:15:00Z' as unknown as Date });
  assert.equal(mostRecentScheduleTime(ran, s, at('2024-05-01T10:19:59Z'), true).time, undefined);
  assert.equal(iso(mostRecentScheduleTime(ran, s, at('2024-05-01T10:20:00Z'), true).time), '2024-05-01T10:20:00.000Z');
});

test('startingDeadlineSeconds: times older than the deadline are not looked for', () => {
  const s = schedule('*/5 * * * *');
  const cj = cronJob({ startingDeadlineSeconds: 60 });
  assert.equal(mostRecentScheduleTime(cj, s, at('2024-05-01T10:17:00Z'), true).time, undefined);
  assert.equal(iso(mostRecentScheduleTime(cj, s, at('2024-05-01T10:15:40Z'), true).time), '2024-05-01T10:15:00.000Z');
});

test('after many missed times, the most recent one is still found', () => {
  const r = mostRecentScheduleTime(
    cronJob({ schedule: '* * * * *' }),
    schedule('* * * * *'),
    at('2024-05-03T08:42:17Z'),
    true,
  );
  assert.ok(r.missed > MANY_MISSED);
  assert.equal(iso(r.time), '2024-05-03T08:42:00.000Z');
  const weekly = schedule('0 3 * * 1');
  const w = mostRecentScheduleTime(cronJob({ schedule: '0 3 * * 1' }), weekly, at('2027-01-01T00:00:00Z'), true);
  assert.equal(iso(w.time), '2026-12-28T03:00:00.000Z');
});

test('the next look is 100 ms after the next scheduled time', () => {
  const cj = cronJob({}, { lastScheduleTime: '2024-05-01T10:15:00Z' as unknown as Date });
  assert.equal(nextRunDelay(cj, schedule('*/5 * * * *'), at('2024-05-01T10:17:00Z')), 3 * 60_000 + 100);
});

test('a scheduled time makes the Job <cronjob>-<minutes since the epoch>, annotated with the time in its zone', () => {
  const t = at('2024-07-01T13:05:00Z');
  const cj = cronJob({
    timeZone: 'America/New_York',
    jobTemplate: {
      metadata: { labels: { team: 'a' }, annotations: { note: 'x' } },
      spec: { template: {}, backoffLimit: 2 },
    },
  });
  const job = jobForSchedule(cj, t);
  assert.equal(job.metadata?.name, `hello-${t / 60_000}`);
  assert.deepEqual(job.metadata?.labels, { team: 'a' });
  assert.deepEqual(job.metadata?.annotations, {
    note: 'x',
    'batch.kubernetes.io/cronjob-scheduled-timestamp': '2024-07-01T09:05:00-04:00',
  });
  assert.deepEqual(
    job.metadata?.ownerReferences?.map((r) => [r.apiVersion, r.kind, r.name, r.uid, r.controller]),
    [['batch/v1', 'CronJob', 'hello', 'cj1', true]],
  );
  assert.equal(job.spec?.backoffLimit, 2);
  assert.equal(
    jobForSchedule(cronJob({}), t).metadata?.annotations?.['batch.kubernetes.io/cronjob-scheduled-timestamp'],
    '2024-07-01T13:05:00Z',
  );
});

test('finished Jobs beyond the history limits go, the earliest started first', () => {
  const finished = (name: string, type: string, start: string): V1Job => ({
    metadata: { name },
    status: { startTime: start as unknown as Date, conditions: [{ type, status: 'True' }] },
  });
  const jobs = [
    finished('c3', 'Complete', '2024-05-01T10:03:00Z'),
    finished('c1', 'Complete', '2024-05-01T10:01:00Z'),
    finished('c2', 'Complete', '2024-05-01T10:02:00Z'),
    finished('f1', 'Failed', '2024-05-01T10:04:00Z'),
    finished('f2', 'Failed', '2024-05-01T10:05:00Z'),
    { metadata: { name: 'running' }, status: {} },
  ];
  const cj = cronJob({ successfulJobsHistoryLimit: 1, failedJobsHistoryLimit: 1 });
  assert.deepEqual(
    jobsBeyondHistory(cj, jobs).map((j) => j.metadata?.name),
    ['c1', 'c2', 'f1'],
  );
  assert.deepEqual(jobsBeyondHistory(cronJob({}), jobs), [], 'no limits, nothing goes');
});
