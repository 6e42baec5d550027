/**
 * The CronJob controller, with the Job controller, against the embedded API server, read back through client-node
 * and kubectl: a Job `<cronjob>-<minutes since the epoch>` at each scheduled time of the CronJob's time zone,
 * annotated and owned as Kubernetes' are, listed in `status.active` until it finishes; `lastScheduleTime` and
 * `lastSuccessfulTime`; the history limit; Forbid and Replace; `startingDeadlineSeconds` and `suspend`;
 * `kubectl create job --from=cronjob/...`. A manual clock moves time from one scheduled minute to the next.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import type { ApiServer } from '../src/apiserver/api-server.js';
import { CronJobController } from '../src/controllers/cron-job-controller.js';
import { JobController } from '../src/controllers/job-controller.js';
import { SharedInformerFactory } from '../src/kube/shared-informer-factory.js';
import { CapturedLogs } from './helpers/captured-logs.js';
import { startApiServer } from './helpers/in-process.js';
import { kubectlSkip, kubectlWith } from './helpers/kubectl.js';
import { ManualClock } from './helpers/manual-clock.js';
import { waitFor } from './helpers/mesh-fixture.js';

const NS = 'cron';
const DEADLINE_MS = 10_000;
const MINUTE = 60_000;
const MERGE = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);

describe('CronJob controller', () => {
  let dir: string;
  let api: ApiServer;
  let core: k8s.CoreV1Api;
  let batch: k8s.BatchV1Api;
  let informers: SharedInformerFactory;
  let controllers: (JobController | CronJobController)[];
  const logs = new CapturedLogs('controllers');
  const clock = new ManualClock(Date.now());
  const { ok } = kubectlWith(() => api.kubeconfigPath);

  /** Moves the clock to the next whole minute after both it and real time, so a CronJob made now is due then. */
  const nextMinute = (): number => {
    const m = Math.ceil((Math.max(clock.now(), Date.now()) + 1000) / MINUTE) * MINUTE;
    clock.set(m);
    return m;
  };
  const jobsOf = async (cj: string): Promise<string[]> =>
    (await batch.listNamespacedJob({ namespace: NS })).items
      .filter((j) => j.metadata?.ownerReferences?.[0]?.name === cj)
      .map((j) => j.metadata?.name ?? '')
      .sort();
  const waitJobs = async (cj: string, want: string[]): Promise<void> => {
    let got: string[] = [];
    await waitFor(
      `${cj}'s jobs ${want.join(',')}`,
      async () => JSON.stringify((got = await jobsOf(cj))) === JSON.stringify(want),
      DEADLINE_MS,
    ).catch(() => assert.fail(`${cj}'s jobs: ${got.join(',')}`));
  };
  const readCronJob = (name: string): Promise<k8s.V1CronJob> => batch.readNamespacedCronJob({ name, namespace: NS });
  /** The test kubelet: every pod of the Job ends in `phase`, once it is there. */
  const finish = async (job: string, phase: 'Succeeded' | 'Failed' = 'Succeeded'): Promise<void> => {
    let pods: k8s.V1Pod[] = [];
    await waitFor(
      `a pod of ${job}`,
      async () =>
        (pods = (await core.listNamespacedPod({ namespace: NS, labelSelector: `job-name=${job}` })).items).length > 0,
      DEADLINE_MS,
    );
    for (const p of pods)
      await core.patchNamespacedPodStatus(
        { name: p.metadata?.name ?? '', namespace: NS, body: { status: { phase } } },
        MERGE,
      );
  };
  const cronJob = (name: string, spec: Partial<k8s.V1CronJobSpec>): k8s.V1CronJob => ({
    metadata: { name, namespace: NS },
    spec: {
      schedule: '* * * * *',
      jobTemplate: {
        metadata: { labels: { app: name } },
        spec: { template: { spec: { restartPolicy: 'Never', containers: [{ name: 'main', image: 'busybox' }] } } },
      },
      ...spec,
    },
  });
  const name = (cj: string, minute: number): string => `${cj}-${minute / MINUTE}`;

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'amesh-cronjobs-'));
    api = await startApiServer(path.join(dir, 'data'));
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(api.kubeconfigPath);
    core = kc.makeApiClient(k8s.CoreV1Api);
    batch = kc.makeApiClient(k8s.BatchV1Api);
    informers = new SharedInformerFactory(kc, logs.control.scope('informers'));
    controllers = [
      new JobController(kc, informers, logs.control.scope('job'), clock),
      new CronJobController(kc, informers, logs.control.scope('cronjob'), clock),
    ];
    for (const c of controllers) c.start();
    informers.start();
    await Promise.all(controllers.map((c) => c.synced));
    await core.createNamespace({ body: { metadata: { name: NS } } });
  });
  after(async () => {
    for (const c of controllers) c.stop();
    await informers.stop();
    await api.stop();
    await rm(dir, { recursive: true, force: true });
  });

  test('a Job <cronjob>-<minutes> per scheduled time, active until it completes; lastSuccessfulTime; older successes beyond the history limit go', async () => {
    const m = nextMinute();
    const cj = await batch.createNamespacedCronJob({
      namespace: NS,
      body: cronJob('hello', { timeZone: 'Asia/Kolkata', successfulJobsHistoryLimit: 1 }),
    });
    await waitJobs('hello', [name('hello', m)]);
    const job = await batch.readNamespacedJob({ name: name('hello', m), namespace: NS });
    const scheduled = new Date(m + 5.5 * 3_600_000).toISOString().replace(/\.000Z$/, '+05:30');
    assert.equal(job.metadata?.annotations?.['batch.kubernetes.io/cronjob-scheduled-timestamp'], scheduled);
    assert.equal(job.metadata?.labels?.app, 'hello');
    assert.deepEqual(
      job.metadata?.ownerReferences?.map((r) => [r.kind, r.name, r.uid, r.controller]),
      [['CronJob', 'hello', cj.metadata?.uid, true]],
    );
    await waitFor('hello lists its job', async () => (await readCronJob('hello')).status?.active?.length === 1);
    const status = (await readCronJob('hello')).status;
    assert.equal(status?.active?.[0]?.uid, job.metadata?.uid);
    assert.equal(new Date(String(status?.lastScheduleTime)).getTime(), m);
    if (kubectlSkip === false)
      assert.match(
        await ok('get', 'cronjobs', '-n', NS, 'hello'),
        /\nhello\s+\* \* \* \* \*\s+Asia\/Kolkata\s+False\s+1\s+/,
      );
    await finish(name('hello', m));
    await waitFor('active emptied, success recorded', async () => {
      const s = (await readCronJob('hello')).status;
      return (s?.active ?? []).length === 0 && s?.lastSuccessfulTime !== undefined;
    });
    clock.advance(MINUTE + 1000);
    await waitJobs('hello', [name('hello', m), name('hello', m + MINUTE)]);
    await finish(name('hello', m + MINUTE));
    await waitJobs('hello', [name('hello', m + MINUTE)]);
    await batch.deleteNamespacedCronJob({ name: 'hello', namespace: NS });
  });

  test('Forbid runs a missed time only once the active Job is done; Replace deletes the active Job for the new one', async () => {
    const m = nextMinute();
    await batch.createNamespacedCronJob({ namespace: NS, body: cronJob('solo', { concurrencyPolicy: 'Forbid' }) });
    await waitJobs('solo', [name('solo', m)]);
    await waitFor('solo lists its job', async () => (await readCronJob('solo')).status?.active?.length === 1);
    clock.advance(MINUTE + 1000);
    await logs.waitFor(
      'Forbid holds the next run',
      (l) => l['cronJob'] === `${NS}/solo` && String(l['message']).includes('Forbid'),
    );
    assert.deepEqual(await jobsOf('solo'), [name('solo', m)]);
    await finish(name('solo', m));
    await waitJobs('solo', [name('solo', m), name('solo', m + MINUTE)]);
    await batch.deleteNamespacedCronJob({ name: 'solo', namespace: NS });

    const r = nextMinute();
    await batch.createNamespacedCronJob({ namespace: NS, body: cronJob('swap', { concurrencyPolicy: 'Replace' }) });
    await waitJobs('swap', [name('swap', r)]);
    await waitFor('swap lists its job', async () => (await readCronJob('swap')).status?.active?.length === 1);
    clock.advance(MINUTE + 1000);
    await waitJobs('swap', [name('swap', r + MINUTE)]);
    await batch.deleteNamespacedCronJob({ name: 'swap', namespace: NS });
  });

  test('a suspended CronJob makes no Job; resumed, times older than startingDeadlineSeconds are missed', async () => {
    nextMinute();
    await batch.createNamespacedCronJob({
      namespace: NS,
      body: cronJob('late', { suspend: true, startingDeadlineSeconds: 30 }),
    });
    clock.advance(2 * MINUTE + 40_000);
    await batch.patchNamespacedCronJob({ name: 'late', namespace: NS, body: { spec: { suspend: false } } }, MERGE);
    const next = Math.ceil(clock.now() / MINUTE) * MINUTE;
    await waitFor('the resumed CronJob waiting for its next time', () => clock.hasTimerAt(next + 100), DEADLINE_MS);
    assert.deepEqual(await jobsOf('late'), [], 'the last scheduled time is 40 s old, beyond the 30 s deadline');
    clock.set(next + 5_000);
    await waitJobs('late', [name('late', next)]);
    await batch.deleteNamespacedCronJob({ name: 'late', namespace: NS });
  });

  test(
    '`kubectl create job --from=cronjob/...` runs the CronJob template as a Job',
    { skip: kubectlSkip },
    async () => {
      await batch.createNamespacedCronJob({ namespace: NS, body: cronJob('manual', { suspend: true }) });
      await ok('create', 'job', '-n', NS, '--from=cronjob/manual', 'manual-run');
      await finish('manual-run');
      await waitFor(
        'manual-run complete',
        async () =>
          (await batch.readNamespacedJob({ name: 'manual-run', namespace: NS })).status?.conditions?.some(
            (c) => c.type === 'Complete' && c.status === 'True',
          ) === true,
        DEADLINE_MS,
      );
      assert.match(await ok('get', 'jobs', '-n', NS, 'manual-run'), /\nmanual-run\s+Complete\s+1\/1\s+/);
    },
  );
});
