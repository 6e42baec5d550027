/**
 * The Job controller (k8s.io/kubernetes `pkg/controller/job`): runs each Job's pods and reports its progress, as
 * `job-sync.ts` decides. Pods are made from the template, named `<job>-<suffix>` (`<job>-<index>-<suffix>` for an
 * Indexed Job, whose pods also get the `batch.kubernetes.io/job-completion-index` annotation and label, the
 * hostname `<job>-<index>` and the `JOB_COMPLETION_INDEX` env), owned by the Job, with the template's labels
 * (`batch.kubernetes.io/job-name`, `job-name`, `controller-uid`, `batch.kubernetes.io/controller-uid`, which the API
 * server puts there). A finished Job with `ttlSecondsAfterFinished` is deleted with its pods once that has passed
 * since it finished, as the TTL-after-finished controller (`pkg/controller/ttlafterfinished`) does.
 */
import {
  BatchV1Api,
  PatchStrategy,
  setHeaderOptions,
  type KubeConfig,
  type V1Container,
  type V1Job,
  type V1JobStatus,
  type V1Pod,
} from '@kubernetes/client-node';
import { isDeepStrictEqual } from 'node:util';
import type { SharedInformerFactory } from '../kube/shared-informer-factory.js';
import { forEachLimited } from '../lib/for-each-limited.js';
import type { Logger } from '../lib/log.js';
import { systemClock, type Clock } from './clock.js';
import { DelayedEnqueue } from './delayed-enqueue.js';
import {
  initialBackoff,
  JOB_COMPLETION_INDEX,
  jobFinished,
  syncJob,
  type FailureBackoff,
  type JobSync,
} from './job-sync.js';
import { createOwnedPod, deleteOwnedPod, podFromTemplate } from './owned-pods.js';
import { PodOwnerController } from './pod-owner-controller.js';

const WRITE_CONCURRENCY = 16;
const MERGE_PATCH = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

/** The template's containers with `JOB_COMPLETION_INDEX` read from the pod's annotation (`addCompletionIndexEnvVariables`). */
function withIndexEnv(containers: readonly V1Container[] | undefined): V1Container[] | undefined {
  return containers?.map((c) => {
    const out = structuredClone(c);
    if (c.env?.some((e) => e.name === 'JOB_COMPLETION_INDEX') !== true)
      out.env = [
        ...(c.env ?? []),
        {
          name: 'JOB_COMPLETION_INDEX',
          valueFrom: { fieldRef: { fieldPath: `metadata.annotations['${JOB_COMPLETION_INDEX}']` } },
        },
      ];
    return out;
  });
}

/** The pod a Job runs for `index` (undefined for a NonIndexed Job). */
export function jobPod(job: V1Job, index: number | undefined): V1Pod {
  const meta = job.metadata ?? {};
  const pod = podFromTemplate('batch/v1', 'Job', meta, job.spec?.template);
  if (index !== undefined) {
    pod.metadata!.generateName = `${meta.name ?? ''}-${index}-`;
    pod.metadata!.annotations![JOB_COMPLETION_INDEX] = String(index);
    pod.metadata!.labels![JOB_COMPLETION_INDEX] = String(index);
    pod.spec!.hostname = `${meta.name ?? ''}-${index}`;
    pod.spec!.containers = withIndexEnv(pod.spec!.containers)!;
    pod.spec!.initContainers = withIndexEnv(pod.spec!.initContainers);
  }
  return pod;
}

export class JobController extends PodOwnerController<V1Job> {
  private readonly later: DelayedEnqueue;
  private readonly backoffs = new Map<string, FailureBackoff>();
  private readonly batch: BatchV1Api;

  constructor(
    kc: KubeConfig,
    informers: SharedInformerFactory,
    log: Logger,
    private readonly clock: Clock = systemClock,
  ) {
    super(kc, informers, log, 'Job', '/apis/batch/v1/jobs', () => clock.now());
    this.batch = kc.makeApiClient(BatchV1Api);
    this.later = new DelayedEnqueue(clock, (key) => this.queue.add(key));
  }

  override stop(): void {
    super.stop();
    this.later.stop();
  }

  protected override forget(key: string): void {
    super.forget(key);
    this.backoffs.delete(key);
  }

  protected async sync(job: V1Job, key: string): Promise<void> {
    const finished = jobFinished(job);
    if (finished !== undefined) {
      await this.expireFinished(key, job, Date.parse(String(finished.lastTransitionTime)));
      return;
    }
    const pods = this.podsOf(job);
    const sync = syncJob({
      job,
      pods,
      now: this.clock.now(),
      backoff: this.backoffs.get(key) ?? initialBackoff(job),
      expectationsSatisfied: this.expectations.satisfied(key),
    });
    this.backoffs.set(key, sync.backoff);
    if (sync.requeueAfterMs !== undefined) this.later.addAfter(key, sync.requeueAfterMs);
    if (sync.statusFirst) {
      await this.updateStatus(job, sync.status);
      await this.managePods(key, job, sync);
    } else {
      await this.managePods(key, job, sync);
      await this.updateStatus(job, sync.status);
    }
  }

  private async managePods(key: string, job: V1Job, sync: JobSync): Promise<void> {
    if (sync.create.length === 0 && sync.remove.length === 0) return;
    this.expectations.expect(key, sync.create.length, sync.remove.length);
    await Promise.all([
      forEachLimited(sync.create, WRITE_CONCURRENCY, (index) =>
        createOwnedPod(this.core, this.expectations, key, jobPod(job, index)),
      ),
      forEachLimited(sync.remove, WRITE_CONCURRENCY, (p) => deleteOwnedPod(this.core, this.expectations, key, p)),
    ]);
    this.log.info({ job: key, created: sync.create.length, deleted: sync.remove.length }, 'job pods reconciled');
  }

  private async updateStatus(job: V1Job, status: V1JobStatus): Promise<void> {
    const before = JSON.parse(JSON.stringify(job.status ?? {})) as unknown;
    const after = JSON.parse(JSON.stringify(status)) as unknown;
    if (isDeepStrictEqual(before, after)) return;
    await this.batch.patchNamespacedJobStatus(
      {
        name: job.metadata?.name ?? '',
        namespace: job.metadata?.namespace ?? '',
        // Written over the version read: a Job seen stale would count its pods again from the start.
        body: { metadata: { resourceVersion: job.metadata?.resourceVersion }, status },
      },
      MERGE_PATCH,
    );
  }

  /** Deletes a finished Job whose `ttlSecondsAfterFinished` has passed, or looks again when it will have. */
  private async expireFinished(key: string, job: V1Job, finishedMs: number): Promise<void> {
    const ttl = job.spec?.ttlSecondsAfterFinished;
    if (ttl === undefined || job.metadata?.deletionTimestamp !== undefined) return;
    const left = finishedMs + ttl * 1000 - this.clock.now();
    if (left > 0) {
      this.later.addAfter(key, left);
      return;
    }
    await this.batch
      .deleteNamespacedJob({
        name: job.metadata?.name ?? '',
        namespace: job.metadata?.namespace ?? '',
        propagationPolicy: 'Foreground',
      })
      .catch((e: unknown) => {
        if ((e as { code?: number }).code !== 404) throw e;
      });
    this.log.info({ job: key }, 'finished job deleted after its ttlSecondsAfterFinished');
  }
}
