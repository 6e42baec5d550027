/**
 * The Job controller against the embedded API server, read back through client-node and kubectl: pods
 * `<job>-<suffix>` owned and labelled as Kubernetes' are, run `parallelism` at a time until `completions` have
 * succeeded (COMPLETIONS 2/2 in `kubectl get jobs`); failed pods retried after the backoff until `backoffLimit`
 * fails the Job; `activeDeadlineSeconds`; an Indexed Job's indexes; `suspend`; `ttlSecondsAfterFinished`. A test
 * "kubelet" reports pod phases through `pods/status`, and a manual clock stands in for the backoff, the deadline
 * and the TTL.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import type { ApiServer } from '../src/apiserver/api-server.js';
import { JobController } from '../src/controllers/job-controller.js';
import { SharedInformerFactory } from '../src/kube/shared-informer-factory.js';
import { silentLogs } from './helpers/captured-logs.js';
import { startApiServer } from './helpers/in-process.js';
import { kubectlSkip, kubectlWith } from './helpers/kubectl.js';
import { ManualClock } from './helpers/manual-clock.js';
import { waitFor } from './helpers/mesh-fixture.js';

const NS = 'batch';
const DEADLINE_MS = 10_000;
const MERGE = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);

describe('Job controller', () => {
  let dir: string;
  let api: ApiServer;
  let core: k8s.CoreV1Api;
  let batch: k8s.BatchV1Api;
  let informers: SharedInformerFactory;
  let controller: JobController;
  const clock = new ManualClock(Math.floor(Date.now() / 1000) * 1000);
  const { ok } = kubectlWith(() => api.kubeconfigPath);

  const podsOf = async (job: string): Promise<k8s.V1Pod[]> =>
    (await core.listNamespacedPod({ namespace: NS, labelSelector: `batch.kubernetes.io/job-name=${job}` })).items;
  const readJob = (name: string): Promise<k8s.V1Job> => batch.readNamespacedJob({ name, namespace: NS });
  /** The job's pods once there are `n` of them in `phase` (Pending: not reported yet). */
  const podsIn = async (job: string, phase: string, n: number): Promise<k8s.V1Pod[]> => {
    let pods: k8s.V1Pod[] = [];
    await waitFor(
      `${n} ${phase} pods of ${job}`,
      async () => {
        pods = (await podsOf(job)).filter((p) => (p.status?.phase ?? 'Pending') === phase);
        return pods.length === n;
      },
      DEADLINE_MS,
    );
    return pods;
  };
  /** What a kubelet reports as a pod runs and ends. */
  const report = async (pods: readonly k8s.V1Pod[], phase: 'Running' | 'Succeeded' | 'Failed'): Promise<void> => {
    for (const p of pods)
      await core.patchNamespacedPodStatus(
        {
          name: p.metadata?.name ?? '',
          namespace: NS,
          body: { status: { phase, conditions: [{ type: 'Ready', status: phase === 'Running' ? 'True' : 'False' }] } },
        },
        MERGE,
      );
  };
  const conditionOf = async (name: string, type: string): Promise<k8s.V1JobCondition | undefined> => {
    let c: k8s.V1JobCondition | undefined;
    await waitFor(
      `${name} ${type}`,
      async () => {
        c = (await readJob(name)).status?.conditions?.find((x) => x.type === type && x.status === 'True');
        return c !== undefined;
      },
      DEADLINE_MS,
    );
    return c;
  };
  const job = (name: string, spec: Partial<k8s.V1JobSpec>): k8s.V1Job => ({
    metadata: { name, namespace: NS },
    spec: {
      template: { spec: { restartPolicy: 'Never', containers: [{ name: 'main', image: 'busybox' }] } },
      ...spec,
    },
  });

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'amesh-jobs-'));
    api = await startApiServer(path.join(dir, 'data'));
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(api.kubeconfigPath);
    core = kc.makeApiClient(k8s.CoreV1Api);
    batch = kc.makeApiClient(k8s.BatchV1Api);
    const logs = silentLogs('controllers');
    informers = new SharedInformerFactory(kc, logs.scope('informers'));
    controller = new JobController(kc, informers, logs.scope('job'), clock);
    controller.start();
    informers.start();
    await controller.synced;
    await core.createNamespace({ body: { metadata: { name: NS } } });
  });
  after(async () => {
    controller.stop();
    await informers.stop();
    await api.stop();
    await rm(dir, { recursive: true, force: true });
  });

  test('pods <job>-<suffix> with the Job labels run one at a time until 2 have succeeded: Complete, COMPLETIONS 2/2', async () => {
    const created = await batch.createNamespacedJob({ namespace: NS, body: job('pi', { completions: 2 }) });
    const uid = created.metadata?.uid ?? '';
    const [first] = await podsIn('pi', 'Pending', 1);
    assert.match(first?.metadata?.name ?? '', /^pi-[a-z0-9]{5}$/);
    assert.deepEqual(
      Object.fromEntries(
        ['batch.kubernetes.io/job-name', 'job-name', 'controller-uid', 'batch.kubernetes.io/controller-uid'].map(
          (l) => [l, first?.metadata?.labels?.[l]],
        ),
      ),
      {
        'batch.kubernetes.io/job-name': 'pi',
        'job-name': 'pi',
        'controller-uid': uid,
        'batch.kubernetes.io/controller-uid': uid,
      },
    );
    assert.deepEqual(
      first?.metadata?.ownerReferences?.map((r) => [r.kind, r.name, r.uid, r.controller]),
      [['Job', 'pi', uid, true]],
    );
    await report([first], 'Running');
    await waitFor('1 active, 1 ready', async () => {
      const s = (await readJob('pi')).status;
      return s?.active === 1 && s.ready === 1 && s.startTime !== undefined;
    });
    await report([first], 'Succeeded');
    const [second] = await podsIn('pi', 'Pending', 1);
    await report([second!], 'Succeeded');
    const complete = await conditionOf('pi', 'Complete');
    assert.equal(complete?.reason, 'CompletionsReached');
    const done = await readJob('pi');
    assert.deepEqual([done.status?.succeeded, done.status?.active, done.status?.failed ?? 0], [2, 0, 0]);
    assert.ok(done.status?.completionTime !== undefined);
    assert.ok(done.status?.conditions?.some((c) => c.type === 'SuccessCriteriaMet' && c.status === 'True'));
    if (kubectlSkip === false) assert.match(await ok('get', 'jobs', '-n', NS, 'pi'), /\npi\s+Complete\s+2\/2\s+/);
  });

  test('a failed pod is replaced once its backoff has passed; more failures than backoffLimit fail the Job', async () => {
    await batch.createNamespacedJob({ namespace: NS, body: job('flaky', { backoffLimit: 1 }) });
    await report(await podsIn('flaky', 'Pending', 1), 'Failed');
    await waitFor('1 failed counted', async () => (await readJob('flaky')).status?.failed === 1);
    assert.equal((await podsOf('flaky')).length, 1, 'no new pod before the 10 s backoff');
    clock.advance(10_000);
    await report(await podsIn('flaky', 'Pending', 1), 'Failed');
    const failed = await conditionOf('flaky', 'Failed');
    assert.equal(failed?.reason, 'BackoffLimitExceeded');
    assert.equal(failed?.message, 'Job has reached the specified backoff limit');
    assert.equal((await readJob('flaky')).status?.failed, 2);
    if (kubectlSkip === false) assert.match(await ok('get', 'jobs', '-n', NS, 'flaky'), /\nflaky\s+Failed\s+0\/1\s+/);
  });

  test('activeDeadlineSeconds: once it has passed, the running pods are deleted and the Job fails with DeadlineExceeded', async () => {
    await batch.createNamespacedJob({
      namespace: NS,
      body: job('slow', { parallelism: 2, completions: 4, activeDeadlineSeconds: 60 }),
    });
    await report(await podsIn('slow', 'Pending', 2), 'Running');
    await waitFor('2 active', async () => (await readJob('slow')).status?.ready === 2);
    clock.advance(60_000);
    const failed = await conditionOf('slow', 'Failed');
    assert.equal(failed?.reason, 'DeadlineExceeded');
    await waitFor('the pods deleted', async () => (await podsOf('slow')).length === 0, DEADLINE_MS);
    // The status that counts the deleted pods is written after the deletions it follows.
    await waitFor(
      'the deleted pods counted as failed',
      async () => {
        const s = (await readJob('slow')).status;
        return (s?.active ?? 0) === 0 && s?.failed === 2;
      },
      DEADLINE_MS,
    );
  });

  test('an Indexed Job runs one pod per index with its completion index; suspending it deletes them, resuming brings them back', async () => {
    await batch.createNamespacedJob({
      namespace: NS,
      body: job('shard', { completions: 2, parallelism: 2, completionMode: 'Indexed' }),
    });
    const pods = await podsIn('shard', 'Pending', 2);
    const byIndex = pods
      .map((p) => [
        p.metadata?.labels?.['batch.kubernetes.io/job-completion-index'],
        p.metadata?.annotations?.['batch.kubernetes.io/job-completion-index'],
        p.spec?.hostname,
        p.spec?.containers[0]?.env?.find((e) => e.name === 'JOB_COMPLETION_INDEX')?.valueFrom?.fieldRef?.fieldPath,
        /^shard-\d-[a-z0-9]{5}$/.test(p.metadata?.name ?? ''),
      ])
      .sort();
    assert.deepEqual(byIndex, [
      ['0', '0', 'shard-0', "metadata.annotations['batch.kubernetes.io/job-completion-index']", true],
      ['1', '1', 'shard-1', "metadata.annotations['batch.kubernetes.io/job-completion-index']", true],
    ]);
    await report(
      pods.filter((p) => p.spec?.hostname === 'shard-0'),
      'Succeeded',
    );
    await waitFor('index 0 completed', async () => (await readJob('shard')).status?.completedIndexes === '0');
    await batch.patchNamespacedJob({ name: 'shard', namespace: NS, body: { spec: { suspend: true } } }, MERGE);
    await conditionOf('shard', 'Suspended');
    await podsIn('shard', 'Pending', 0);
    if (kubectlSkip === false)
      assert.match(await ok('get', 'jobs', '-n', NS, 'shard'), /\nshard\s+Suspended\s+1\/2\s+/);
    await batch.patchNamespacedJob({ name: 'shard', namespace: NS, body: { spec: { suspend: false } } }, MERGE);
    const [again] = await podsIn('shard', 'Pending', 1);
    assert.equal(again?.spec?.hostname, 'shard-1', 'only the index not completed runs again');
    await report([again], 'Succeeded');
    await conditionOf('shard', 'Complete');
    assert.equal((await readJob('shard')).status?.completedIndexes, '0-1');
  });

  test('ttlSecondsAfterFinished: a finished Job is deleted with its pods once the TTL has passed', async () => {
    await batch.createNamespacedJob({ namespace: NS, body: job('once', { ttlSecondsAfterFinished: 100 }) });
    await report(await podsIn('once', 'Pending', 1), 'Succeeded');
    await conditionOf('once', 'Complete');
    clock.advance(99_000);
    assert.equal((await readJob('once')).metadata?.name, 'once');
    clock.advance(1_000);
    await waitFor(
      'the Job and its pod gone',
      async () =>
        (await batch.listNamespacedJob({ namespace: NS })).items.every((j) => j.metadata?.name !== 'once') &&
        (await podsOf('once')).length === 0,
      DEADLINE_MS,
    );
  });
});
