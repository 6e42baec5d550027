/**
 * What one sync of a Job decides (k8s.io/kubernetes `pkg/controller/job/job_controller.go` syncJob and manageJob,
 * `indexed_job_utils.go`), from the Job, its pods and the time, with no I/O: the pods to create (by completion
 * index for an Indexed Job) and to delete, the status to write, and when to look again.
 *
 * Pods run up to `parallelism` at a time until `completions` have succeeded (without `completions`, until one has
 * and the others are done); a suspended Job has none. Failed pods are retried after a backoff of 10 s doubling
 * to 6 min, until more than `backoffLimit` have failed (with `restartPolicy: OnFailure`, until the active pods'
 * restarts reach it), or `activeDeadlineSeconds` has passed since `startTime`: then its active pods are deleted
 * and the Job fails. As current Kubernetes does, a finishing Job first gets `SuccessCriteriaMet` or
 * `FailureTarget`, and `Complete` (with `completionTime`) or `Failed` once none of its pods is still running or
 * terminating.
 *
 * Kubernetes counts finished pods exactly by holding each with the `batch.kubernetes.io/job-tracking` finalizer
 * until its status has counted it; amesh's pods carry none, so `succeeded` and `failed` never go down, the pods a
 * failing Job deletes are counted in the status written before the deletions, and a pod deleted by someone else
 * before it was seen finished is not counted. `podFailurePolicy`, `successPolicy` and
 * `backoffLimitPerIndex` are not applied.
 */
import type { V1Job, V1JobCondition, V1JobStatus, V1Pod } from '@kubernetes/client-node';
import { isPodActive, isPodReady } from './owned-objects.js';

export const JOB_COMPLETION_INDEX = 'batch.kubernetes.io/job-completion-index';
/** `SetDefaults_Job`'s backoffLimit. */
export const DEFAULT_BACKOFF_LIMIT = 6;
/** The pod failure backoff (`DefaultJobPodFailureBackOff`, `MaxJobPodFailureBackOff`). */
export const POD_FAILURE_BACKOFF_MS = 10_000;
export const MAX_POD_FAILURE_BACKOFF_MS = 6 * 60_000;
/** Pods created or deleted in one sync at most (`MaxPodCreateDeletePerSync`). */
const MAX_POD_CREATE_DELETE_PER_SYNC = 500;

/**
 * Failures since the last success and when the last was seen, what the backoff waits out (`backoffRecord`), with
 * the counts it was last brought up to date with.
 */
export interface FailureBackoff {
  readonly failures: number;
  readonly lastFailureMs: number;
  readonly failed: number;
  readonly succeeded: number;
}

/** The record of a Job first seen: no failure to wait out. */
export function initialBackoff(job: V1Job): FailureBackoff {
  return { failures: 0, lastFailureMs: 0, failed: job.status?.failed ?? 0, succeeded: job.status?.succeeded ?? 0 };
}

export interface JobSyncInput {
  readonly job: V1Job;
  /** The pods the Job controls. */
  readonly pods: readonly V1Pod[];
  readonly now: number;
  readonly backoff: FailureBackoff;
  /** False while creates or deletes of an earlier sync are still to be seen: then no pods are made or removed. */
  readonly expectationsSatisfied: boolean;
}

export interface JobSync {
  /** One entry per pod to create: its completion index, or undefined for a NonIndexed Job. */
  readonly create: readonly (number | undefined)[];
  readonly remove: readonly V1Pod[];
  readonly status: V1JobStatus;
  /** The status counts the pods to remove, so it is written before they are deleted. */
  readonly statusFirst: boolean;
  readonly backoff: FailureBackoff;
  /** Sync again after this long: a backoff or a deadline runs out. */
  readonly requeueAfterMs?: number;
}

type Condition = Pick<V1JobCondition, 'type' | 'reason' | 'message'>;

const COMPLETIONS_REACHED = { reason: 'CompletionsReached', message: 'Reached expected number of succeeded pods' };
const BACKOFF_LIMIT_EXCEEDED = {
  reason: 'BackoffLimitExceeded',
  message: 'Job has reached the specified backoff limit',
};
const DEADLINE_EXCEEDED = { reason: 'DeadlineExceeded', message: 'Job was active longer than specified deadline' };

const isTrue = (job: V1Job, type: string): V1JobCondition | undefined =>
  job.status?.conditions?.find((c) => c.type === type && c.status === 'True');

/** Complete or Failed: nothing more is done for the Job (`IsJobFinished`). */
export function jobFinished(job: V1Job): V1JobCondition | undefined {
  return isTrue(job, 'Complete') ?? isTrue(job, 'Failed');
}

/** A timestamp as it comes from the API (a string, though client-node types it as a Date), in ms. */
const toMs = (t: Date | string | undefined): number | undefined =>
  typeof t === 'string' ? Date.parse(t) : t?.getTime();

/** A pod's completion index, or undefined when it has none that is valid (`getCompletionIndex`). */
export function completionIndex(p: V1Pod): number | undefined {
  const v = p.metadata?.annotations?.[JOB_COMPLETION_INDEX];
  if (v === undefined || !/^\d+$/.test(v)) return undefined;
  return Number(v);
}

/** `1,3-5,7` from a set of indexes (`completedIndexes`). */
export function formatIndexes(indexes: ReadonlySet<number>): string {
  const sorted = [...indexes].sort((a, b) => a - b);
  const out: string[] = [];
  for (let i = 0; i < sorted.length;) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j]! + 1) j++;
    out.push(j === i ? String(sorted[i]) : `${sorted[i]!}-${sorted[j]!}`);
    i = j + 1;
  }
  return out.join(',');
}

export function parseIndexes(s: string | undefined, completions: number): Set<number> {
  const out = new Set<number>();
  for (const part of (s ?? '').split(',').filter((x) => x !== '')) {
    const [a, b] = part.split('-').map(Number);
    for (let i = a!; i <= (b ?? a!) && i < completions; i++) out.add(i);
  }
  return out;
}

/** Not ready before ready, then newest first: the active pods a scale-down removes first. */
function removalOrder(a: V1Pod, b: V1Pod): number {
  const ready = Number(isPodReady(a)) - Number(isPodReady(b));
  if (ready !== 0) return ready;
  return (toMs(b.metadata?.creationTimestamp) ?? 0) - (toMs(a.metadata?.creationTimestamp) ?? 0);
}

function restarts(p: V1Pod): number {
  return [...(p.status?.initContainerStatuses ?? []), ...(p.status?.containerStatuses ?? [])].reduce(
    (n, c) => n + c.restartCount,
    0,
  );
}

/** The backoff left before a failed pod may be replaced (`getRemainingTime`). */
export function backoffRemaining(b: FailureBackoff, now: number): number {
  if (b.failures === 0) return 0;
  const delay = Math.min(POD_FAILURE_BACKOFF_MS * 2 ** (b.failures - 1), MAX_POD_FAILURE_BACKOFF_MS);
  return Math.max(0, b.lastFailureMs + delay - now);
}

/** The conditions with `type` set to `status`, changed only when something about it changed (`ensureJobConditionStatus`). */
function withCondition(
  list: readonly V1JobCondition[],
  c: Condition,
  status: 'True' | 'False',
  now: string,
): V1JobCondition[] {
  const existing = list.find((x) => x.type === c.type);
  const fresh: V1JobCondition = {
    type: c.type,
    status,
    reason: c.reason,
    message: c.message,
    lastProbeTime: now as unknown as Date,
    lastTransitionTime: now as unknown as Date,
  };
  if (existing === undefined) return status === 'False' ? [...list] : [...list, fresh];
  if (existing.status === status && existing.reason === c.reason && existing.message === c.message) return [...list];
  return list.map((x) => (x === existing ? fresh : x));
}

export function syncJob(input: JobSyncInput): JobSync {
  const { job, pods, now } = input;
  const spec = job.spec!;
  const status = job.status ?? {};
  const nowText = new Date(now).toISOString().replace(/\.\d{3}Z$/, 'Z');
  const suspended = spec.suspend === true;
  const indexed = spec.completionMode === 'Indexed';
  const completions = spec.completions ?? undefined;
  const parallelism = spec.parallelism ?? 1;
  const backoffLimit = spec.backoffLimit ?? DEFAULT_BACKOFF_LIMIT;
  const onlyReplaceFailed = spec.podReplacementPolicy === 'Failed';

  let active = pods.filter(isPodActive);
  const terminating = pods.filter(
    (p) =>
      p.metadata?.deletionTimestamp !== undefined && p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed',
  );
  const failedNow = pods.filter(
    (p) =>
      p.status?.phase === 'Failed' ||
      (!onlyReplaceFailed && p.metadata?.deletionTimestamp !== undefined && p.status?.phase !== 'Succeeded'),
  ).length;
  let failed = Math.max(status.failed ?? 0, failedNow);
  let succeeded: number;
  let completedIndexes: Set<number> | undefined;
  if (indexed) {
    completedIndexes = parseIndexes(status.completedIndexes, completions ?? 0);
    for (const p of pods) {
      const ix = completionIndex(p);
      if (p.status?.phase === 'Succeeded' && ix !== undefined && ix < (completions ?? 0)) completedIndexes.add(ix);
    }
    succeeded = completedIndexes.size;
  } else {
    succeeded = Math.max(status.succeeded ?? 0, pods.filter((p) => p.status?.phase === 'Succeeded').length);
  }

  let backoff = input.backoff;
  if (succeeded > backoff.succeeded) backoff = { ...backoff, failures: 0 };
  if (failed > backoff.failed)
    backoff = { ...backoff, failures: backoff.failures + failed - backoff.failed, lastFailureMs: now };
  backoff = { ...backoff, failed, succeeded };

  let conditions = [...(status.conditions ?? [])];
  let startTime = status.startTime as unknown as string | undefined;
  if (startTime === undefined && !suspended) startTime = nowText;
  const startMs = toMs(startTime);
  let requeueAfterMs: number | undefined;
  const requeue = (ms: number): void => {
    requeueAfterMs = requeueAfterMs === undefined ? ms : Math.min(requeueAfterMs, ms);
  };

  // A finishing Job keeps the interim condition it got; otherwise look for a reason to fail.
  let finishing: Condition | undefined;
  const successMet = isTrue(job, 'SuccessCriteriaMet');
  const failureTarget = isTrue(job, 'FailureTarget');
  if (successMet !== undefined) finishing = { type: 'SuccessCriteriaMet', ...COMPLETIONS_REACHED };
  else if (failureTarget !== undefined)
    finishing = { type: 'FailureTarget', reason: failureTarget.reason, message: failureTarget.message };
  else if (
    failed > backoffLimit ||
    (spec.template.spec?.restartPolicy === 'OnFailure' &&
      backoffLimit > 0 &&
      active.reduce((n, p) => n + restarts(p), 0) >= backoffLimit)
  )
    finishing = { type: 'FailureTarget', ...BACKOFF_LIMIT_EXCEEDED };
  else if (spec.activeDeadlineSeconds !== undefined && !suspended && startMs !== undefined) {
    const left = startMs + spec.activeDeadlineSeconds * 1000 - now;
    if (left <= 0) finishing = { type: 'FailureTarget', ...DEADLINE_EXCEEDED };
    else requeue(left);
  }

  const create: (number | undefined)[] = [];
  const remove: V1Pod[] = [];
  let statusFirst = false;
  if (finishing?.type === 'FailureTarget') {
    // Every pod still running is deleted, and counts as failed: counted in the status that first says
    // FailureTarget, which is written before they are deleted, so that a write refused as stale deletes nothing.
    if (failureTarget === undefined && !input.expectationsSatisfied) finishing = undefined;
    else {
      if (failureTarget === undefined) {
        failed += active.length;
        statusFirst = active.length > 0;
      }
      remove.push(...active);
      active = [];
    }
  } else if (finishing === undefined && input.expectationsSatisfied && job.metadata?.deletionTimestamp === undefined) {
    let wantActive: number;
    if (suspended) wantActive = 0;
    else if (completions === undefined) wantActive = succeeded > 0 ? active.length : parallelism;
    else wantActive = Math.max(0, Math.min(completions - succeeded, parallelism));
    if (indexed) {
      // Pods of an index out of range, already completed or run twice go first.
      const seen = new Set<number>();
      for (const p of [...active].sort(removalOrder).reverse()) {
        const ix = completionIndex(p);
        if (ix === undefined || ix >= (completions ?? 0) || completedIndexes!.has(ix) || seen.has(ix)) remove.push(p);
        else seen.add(ix);
      }
    }
    const kept = active.filter((p) => !remove.includes(p));
    if (kept.length > wantActive) remove.push(...[...kept].sort(removalOrder).slice(0, kept.length - wantActive));
    else if (kept.length < wantActive) {
      const wait = backoffRemaining(backoff, now);
      if (wait > 0) requeue(wait);
      else {
        let n = wantActive - kept.length;
        if (onlyReplaceFailed) n -= terminating.length;
        n = Math.min(n, MAX_POD_CREATE_DELETE_PER_SYNC);
        if (indexed) {
          const taken = new Set([...kept, ...terminating].map(completionIndex));
          for (let ix = 0; ix < (completions ?? 0) && create.length < n; ix++)
            if (!completedIndexes!.has(ix) && !taken.has(ix)) create.push(ix);
        } else for (let i = 0; i < n; i++) create.push(undefined);
      }
    }
    active = kept.filter((p) => !remove.includes(p));
    const running = active.length + create.length;
    const complete =
      completions === undefined ? succeeded > 0 && running === 0 : succeeded >= completions && running === 0;
    if (complete) finishing = { type: 'SuccessCriteriaMet', ...COMPLETIONS_REACHED };
    else if (suspended)
      conditions = withCondition(
        conditions,
        { type: 'Suspended', reason: 'JobSuspended', message: 'Job suspended' },
        'True',
        nowText,
      );
    else {
      const resumed = withCondition(
        conditions,
        { type: 'Suspended', reason: 'JobResumed', message: 'Job resumed' },
        'False',
        nowText,
      );
      // A resumed Job's deadline counts from its resumption.
      if (conditions.some((c) => c.type === 'Suspended' && c.status === 'True')) startTime = nowText;
      conditions = resumed;
    }
  }

  let completionTime = status.completionTime as unknown as string | undefined;
  if (finishing !== undefined) {
    conditions = withCondition(conditions, finishing, 'True', nowText);
    const done = active.length === 0 && terminating.length === 0 && remove.length === 0;
    if (done) {
      const success = finishing.type === 'SuccessCriteriaMet';
      conditions = withCondition(conditions, { ...finishing, type: success ? 'Complete' : 'Failed' }, 'True', nowText);
      if (success) completionTime = nowText;
    }
  }

  const next: V1JobStatus = Object.assign(structuredClone(status), {
    conditions: conditions.length > 0 ? conditions : undefined,
    startTime: startTime as unknown as Date,
    completionTime: completionTime as unknown as Date,
    active: active.length + create.length,
    ready: active.filter(isPodReady).length,
    succeeded,
    failed,
    terminating: terminating.length + remove.length,
    uncountedTerminatedPods: {},
  });
  if (indexed) next.completedIndexes = formatIndexes(completedIndexes!);
  return { create, remove, status: next, statusFirst, backoff, requeueAfterMs };
}
