/**
 * The CronJob controller (k8s.io/kubernetes `pkg/controller/cronjob/cronjob_controllerv2.go`): at each time its
 * `schedule` names, on the wall clock of `timeZone` (else the process's zone), a CronJob makes a Job
 * `<cronjob>-<minutes since the epoch>` from its `jobTemplate`, annotated with
 * `batch.kubernetes.io/cronjob-scheduled-timestamp`, and lists it in `status.active` until it finishes.
 * `concurrencyPolicy` Forbid leaves a time unrun while a Job is active (it runs once they are done, if still
 * within `startingDeadlineSeconds`), Replace deletes the active Jobs first; a time later than
 * `startingDeadlineSeconds` is missed; `suspend` makes none. `lastScheduleTime` and `lastSuccessfulTime` are
 * reported, and finished Jobs beyond `successfulJobsHistoryLimit` and `failedJobsHistoryLimit` are deleted, oldest
 * first. What Kubernetes records as Events on the CronJob (a missed time, an unparseable schedule, an unknown time
 * zone, a Job it did not make) is logged instead.
 */
import {
  BatchV1Api,
  PatchStrategy,
  setHeaderOptions,
  type KubeConfig,
  type V1CronJob,
  type V1CronJobStatus,
  type V1Job,
  type V1ObjectReference,
} from '@kubernetes/client-node';
import { isDeepStrictEqual } from 'node:util';
import type { RestartingInformer } from '../kube/informer.js';
import { ReconcileQueue } from '../kube/reconcile-queue.js';
import type { SharedInformerFactory } from '../kube/shared-informer-factory.js';
import { parseCronSchedule } from '../lib/cron-schedule.js';
import { kubeTime } from '../lib/kube-time.js';
import type { Logger } from '../lib/log.js';
import { isTimeZone, localTimeZone } from '../lib/zoned-time.js';
import { systemClock, type Clock } from './clock.js';
import {
  finishedAs,
  jobForSchedule,
  jobName,
  jobsBeyondHistory,
  MANY_MISSED,
  mostRecentScheduleTime,
  nextRunDelay,
} from './cron-job-runs.js';
import { DelayedEnqueue } from './delayed-enqueue.js';
import { controllerOf, keyOf, splitKey } from './owned-objects.js';

const MAX_ATTEMPTS = 15;
const MERGE_PATCH = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

const notFound = (e: unknown): boolean => (e as { code?: number }).code === 404;

function referenceTo(job: V1Job): V1ObjectReference {
  const m = job.metadata ?? {};
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    namespace: m.namespace,
    name: m.name,
    uid: m.uid,
    resourceVersion: m.resourceVersion,
  };
}

export class CronJobController {
  private readonly cronJobs: RestartingInformer<V1CronJob>;
  private readonly jobs: RestartingInformer<V1Job>;
  private readonly queue: ReconcileQueue;
  private readonly later: DelayedEnqueue;
  private readonly batch: BatchV1Api;
  readonly synced: Promise<void>;

  constructor(
    kc: KubeConfig,
    informers: SharedInformerFactory,
    private readonly log: Logger,
    private readonly clock: Clock = systemClock,
  ) {
    this.batch = kc.makeApiClient(BatchV1Api);
    this.queue = new ReconcileQueue((key) => this.reconcile(key), MAX_ATTEMPTS, log);
    this.later = new DelayedEnqueue(clock, (key) => this.queue.add(key));
    const enqueue = (cj: V1CronJob): void => this.queue.add(keyOf(cj.metadata));
    this.cronJobs = informers.informerFor<V1CronJob>('/apis/batch/v1/cronjobs');
    this.cronJobs.addEventHandler({ add: enqueue, update: enqueue });
    this.jobs = informers.informerFor<V1Job>('/apis/batch/v1/jobs');
    const owner = (job: V1Job): void => {
      const ref = controllerOf(job.metadata);
      if (ref?.kind === 'CronJob') this.queue.add(`${job.metadata?.namespace ?? ''}/${ref.name}`);
    };
    this.jobs.addEventHandler({ add: owner, update: owner, delete: owner });
    this.synced = Promise.all([this.cronJobs.synced, this.jobs.synced]).then(() => undefined);
  }

  start(): void {
    void this.synced.then(() => this.queue.run());
  }

  stop(): void {
    this.queue.stop();
    this.later.stop();
  }

  private async reconcile(key: string): Promise<void> {
    const { namespace, name } = splitKey(key);
    const cj = this.cronJobs.get(name, namespace);
    if (cj === undefined) return;
    const jobs = this.jobs.list(namespace).filter((j) => controllerOf(j.metadata)?.uid === cj.metadata?.uid);
    const status: V1CronJobStatus = structuredClone(cj.status ?? {});
    await this.trackJobs(key, cj, jobs, status);
    await this.schedule(key, cj, status);
    for (const job of jobsBeyondHistory(cj, jobs)) {
      await this.deleteJob(job);
      status.active = status.active?.filter((r) => r.uid !== job.metadata?.uid);
    }
    await this.updateStatus(cj, status);
  }

  /** Active Jobs that finished or went missing leave `status.active`; a success moves `lastSuccessfulTime`. */
  private async trackJobs(key: string, cj: V1CronJob, jobs: readonly V1Job[], status: V1CronJobStatus): Promise<void> {
    const uids = new Set(jobs.map((j) => j.metadata?.uid));
    for (const job of jobs) {
      const listed = status.active?.some((r) => r.uid === job.metadata?.uid) === true;
      const finished = finishedAs(job);
      if (!listed && finished === undefined)
        this.log.warn(
          { cronJob: key, job: job.metadata?.name },
          'saw a job that the controller did not create or forgot',
        );
      if (listed && finished !== undefined) status.active = status.active?.filter((r) => r.uid !== job.metadata?.uid);
      const completed = Date.parse(String(job.status?.completionTime ?? ''));
      const last = Date.parse(String(status.lastSuccessfulTime ?? ''));
      if (finished === 'Complete' && !Number.isNaN(completed) && (Number.isNaN(last) || completed > last))
        status.lastSuccessfulTime = job.status!.completionTime;
    }
    // A listed Job the informer has not got may be newer than it; only the API can say it is gone.
    for (const ref of status.active ?? []) {
      if (uids.has(ref.uid)) continue;
      try {
        await this.batch.readNamespacedJob({ name: ref.name ?? '', namespace: cj.metadata?.namespace ?? '' });
      } catch (e) {
        if (!notFound(e)) throw e;
        this.log.info({ cronJob: key, job: ref.name }, 'active job went missing');
        status.active = status.active?.filter((r) => r.uid !== ref.uid);
      }
    }
  }

  /** Runs the most recent scheduled time not yet run, if the policies allow, and looks again at the next one. */
  private async schedule(key: string, cj: V1CronJob, status: V1CronJobStatus): Promise<void> {
    const spec = cj.spec;
    if (spec === undefined || cj.metadata?.deletionTimestamp !== undefined || spec.suspend === true) return;
    if (spec.timeZone !== undefined && !isTimeZone(spec.timeZone)) {
      this.log.warn({ cronJob: key, timeZone: spec.timeZone }, 'not starting job: unknown time zone');
      return;
    }
    const parsed = parseCronSchedule(spec.schedule, spec.timeZone ?? localTimeZone());
    if ('error' in parsed) {
      this.log.warn({ cronJob: key, schedule: spec.schedule, error: parsed.error }, 'unparseable schedule');
      return;
    }
    const now = this.clock.now();
    const current: V1CronJob = Object.assign({}, cj, { status });
    const requeue = (): void => {
      const delay = nextRunDelay(current, parsed.schedule, now);
      if (delay !== undefined) this.later.addAfter(key, delay);
    };
    const { time, missed } = mostRecentScheduleTime(current, parsed.schedule, now, true);
    if (missed > MANY_MISSED)
      this.log.warn(
        { cronJob: key },
        'too many missed start times: set or decrease .spec.startingDeadlineSeconds or check clock skew',
      );
    if (time === undefined) return requeue();
    const deadline = spec.startingDeadlineSeconds;
    if (deadline !== undefined && time + deadline * 1000 < now) {
      this.log.warn({ cronJob: key, scheduled: kubeTime(time) }, 'missed scheduled time to start a job');
      return requeue();
    }
    const name = jobName(cj, time);
    const lastScheduled = Date.parse(String(status.lastScheduleTime ?? ''));
    if (status.active?.some((r) => r.name === name) === true || lastScheduled === time) return requeue();
    if (spec.concurrencyPolicy === 'Forbid' && (status.active?.length ?? 0) > 0) {
      this.log.info({ cronJob: key }, 'not starting job: a prior run is still active and concurrency policy is Forbid');
      return requeue();
    }
    if (spec.concurrencyPolicy === 'Replace')
      for (const ref of [...(status.active ?? [])]) {
        await this.deleteJob({ metadata: { name: ref.name, namespace: ref.namespace } });
        status.active = status.active?.filter((r) => r.uid !== ref.uid);
      }
    const job = await this.createJob(cj, time);
    if (job === undefined) return requeue();
    status.active = [...(status.active ?? []), referenceTo(job)];
    status.lastScheduleTime = kubeTime(time) as unknown as Date;
    this.log.info({ cronJob: key, job: job.metadata?.name }, 'created job');
    requeue();
  }

  /** The Job for `time`; one this CronJob made already (and has not listed) is taken, anyone else's left alone. */
  private async createJob(cj: V1CronJob, time: number): Promise<V1Job | undefined> {
    const body = jobForSchedule(cj, time);
    const namespace = cj.metadata?.namespace ?? '';
    try {
      return await this.batch.createNamespacedJob({ namespace, body });
    } catch (e) {
      if ((e as { code?: number }).code !== 409) throw e;
    }
    const existing = await this.batch.readNamespacedJob({ name: body.metadata?.name ?? '', namespace });
    if (controllerOf(existing.metadata)?.uid !== cj.metadata?.uid) return undefined;
    return cj.status?.active?.some((r) => r.uid === existing.metadata?.uid) === true ? undefined : existing;
  }

  /** Deletes a Job and, in the background, its pods. */
  private async deleteJob(job: V1Job): Promise<void> {
    await this.batch
      .deleteNamespacedJob({
        name: job.metadata?.name ?? '',
        namespace: job.metadata?.namespace ?? '',
        propagationPolicy: 'Background',
      })
      .catch((e: unknown) => {
        if (!notFound(e)) throw e;
      });
  }

  private async updateStatus(cj: V1CronJob, status: V1CronJobStatus): Promise<void> {
    const before = JSON.parse(JSON.stringify(cj.status ?? {})) as unknown;
    const after = JSON.parse(JSON.stringify(status)) as unknown;
    if (isDeepStrictEqual(before, after)) return;
    await this.batch.patchNamespacedCronJobStatus(
      {
        name: cj.metadata?.name ?? '',
        namespace: cj.metadata?.namespace ?? '',
        // Over the version read, so a stale active list is not written back; an empty list is left out (omitempty).
        body: {
          metadata: { resourceVersion: cj.metadata?.resourceVersion },
          status: Object.assign({}, status, { active: (status.active?.length ?? 0) > 0 ? status.active : null }),
        },
      },
      MERGE_PATCH,
    );
  }
}
