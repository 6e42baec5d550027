/**
 * What a CronJob's schedule asks of it at a given time, with no I/O (k8s.io/kubernetes `pkg/controller/cronjob`
 * utils.go): the most recent scheduled time not yet run, when to look again, the Job a scheduled time makes, and
 * which finished Jobs its history limits let go.
 */
import type { V1CronJob, V1Job } from '@kubernetes/client-node';
import type { CronSchedule } from '../lib/cron-schedule.js';
import { formatInZone } from '../lib/zoned-time.js';
import { controllerReference } from './owned-objects.js';

export const CRONJOB_SCHEDULED_TIMESTAMP = 'batch.kubernetes.io/cronjob-scheduled-timestamp';
/** Looked at again this long after a scheduled time, so that time has surely come (`nextScheduleDelta`). */
export const NEXT_SCHEDULE_DELTA_MS = 100;
/** More missed times than this are reported (`TooManyMissedTimes`). */
export const MANY_MISSED = 100;

const toMs = (t: Date | string | undefined): number | undefined =>
  typeof t === 'string' ? Date.parse(t) : t?.getTime();

/** Where the search for unmet times starts: the last scheduled time, else the CronJob's creation. */
function earliestTime(cj: V1CronJob): number {
  return toMs(cj.status?.lastScheduleTime) ?? toMs(cj.metadata?.creationTimestamp) ?? 0;
}

export interface UnmetTime {
  /** The most recent scheduled time at or before now that has not been run, if any. */
  readonly time?: number;
  /** How many scheduled times were missed, counted up to MANY_MISSED + 1. */
  readonly missed: number;
}

/**
 * The most recent scheduled time in (earliest, now] (`mostRecentScheduleTime`), the earliest time moved up to
 * `now - startingDeadlineSeconds` when `withDeadline` and the CronJob has one.
 */
export function mostRecentScheduleTime(
  cj: V1CronJob,
  schedule: CronSchedule,
  now: number,
  withDeadline: boolean,
): UnmetTime {
  let earliest = earliestTime(cj);
  const deadline = cj.spec?.startingDeadlineSeconds;
  if (withDeadline && deadline !== undefined) earliest = Math.max(earliest, now - deadline * 1000);
  let last = schedule.next(earliest);
  if (last === undefined || last > now) return { missed: 0 };
  let missed = 1;
  for (let t = schedule.next(last); t !== undefined && t <= now; t = schedule.next(last)) {
    last = t;
    if (++missed > MANY_MISSED) break;
  }
  if (missed > MANY_MISSED) {
    // Too many to walk: the latest second whose next time is still due, found by halving.
    let lo = last;
    let hi = Math.floor(now / 1000) * 1000;
    while (hi - lo > 1000) {
      const mid = Math.floor((lo + hi) / 2000) * 1000;
      const t = schedule.next(mid);
      if (t !== undefined && t <= now) lo = mid;
      else hi = mid;
    }
    const t = schedule.next(lo);
    if (t !== undefined && t <= now) last = t;
  }
  return { time: last, missed };
}

/** How long until the next scheduled time after the most recent one (`nextScheduleTimeDuration`). */
export function nextRunDelay(cj: V1CronJob, schedule: CronSchedule, now: number): number | undefined {
  const from = mostRecentScheduleTime(cj, schedule, now, false).time ?? earliestTime(cj);
  const next = schedule.next(from);
  return next === undefined ? undefined : next + NEXT_SCHEDULE_DELTA_MS - now;
}

/** `<cronjob>-<minutes since the epoch>`: one name per scheduled time, so a time is never run twice. */
export function jobName(cj: V1CronJob, scheduled: number): string {
  return `${cj.metadata?.name ?? ''}-${Math.floor(scheduled / 60_000)}`;
}

/** The Job for `scheduled` (`getJobFromTemplate2`); its annotation writes the time in the CronJob's zone, else UTC. */
export function jobForSchedule(cj: V1CronJob, scheduled: number): V1Job {
  const template = cj.spec?.jobTemplate;
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name: jobName(cj, scheduled),
      namespace: cj.metadata?.namespace,
      labels: { ...template?.metadata?.labels },
      annotations: {
        ...template?.metadata?.annotations,
        [CRONJOB_SCHEDULED_TIMESTAMP]: formatInZone(scheduled, cj.spec?.timeZone ?? 'UTC'),
      },
      ownerReferences: [controllerReference('batch/v1', 'CronJob', cj.metadata ?? {})],
    },
    spec: structuredClone(template?.spec ?? { template: {} }),
  };
}

/** `Complete` or `Failed`, when the Job has finished. */
export function finishedAs(job: V1Job): 'Complete' | 'Failed' | undefined {
  const c = job.status?.conditions?.find((x) => (x.type === 'Complete' || x.type === 'Failed') && x.status === 'True');
  return c?.type as 'Complete' | 'Failed' | undefined;
}

/** Started first first, unstarted last, then by name (`byJobStartTime`). */
function byStartTime(a: V1Job, b: V1Job): number {
  const sa = toMs(a.status?.startTime);
  const sb = toMs(b.status?.startTime);
  if (sa === undefined) return sb === undefined ? 0 : 1;
  if (sb === undefined) return -1;
  if (sa !== sb) return sa - sb;
  return (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? '');
}

/** The oldest finished Jobs beyond `successfulJobsHistoryLimit` and `failedJobsHistoryLimit` (`cleanupFinishedJobs`). */
export function jobsBeyondHistory(cj: V1CronJob, jobs: readonly V1Job[]): V1Job[] {
  const out: V1Job[] = [];
  const limits = [
    ['Complete', cj.spec?.successfulJobsHistoryLimit],
    ['Failed', cj.spec?.failedJobsHistoryLimit],
  ] as const;
  for (const [kind, limit] of limits) {
    if (limit === undefined) continue;
    const finished = jobs.filter((j) => finishedAs(j) === kind).sort(byStartTime);
    out.push(...finished.slice(0, Math.max(0, finished.length - limit)));
  }
  return out;
}
