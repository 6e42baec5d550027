import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Job, V1Pod } from '@kubernetes/client-node';
import { formatIndexes, initialBackoff, parseIndexes, syncJob, type JobSyncInput } from './job-sync.js';

const NOW = Date.parse('2024-05-01T10:00:00Z');

function job(spec: Partial<NonNullable<V1Job['spec']>>, status: V1Job['status'] = {}): V1Job {
  return {
    metadata: { name: 'pi', namespace: 'ns', uid: 'u1' },
    spec: { template: { spec: { containers: [], restartPolicy: 'Never' } }, ...spec },
    status,
  };
}

let serial = 0;
function pod(phase: string, extra: { index?: number; ready?: boolean; deleting?: boolean } = {}): V1Pod {
  serial++;
  return {
    metadata: {
      name: `pi-${serial}`,
      creationTimestamp: new Date(NOW - 60_000 + serial * 1000),
      annotations: extra.index === undefined ? {} : { 'batch.kubernetes.io/job-completion-index': String(extra.index) },
      deletionTimestamp: extra.deleting === true ? new Date(NOW) : undefined,
    },
    status: { phase, conditions: extra.ready === true ? [{ type: 'Ready', status: 'True' }] : [] },
  };
}

const input = (j: V1Job, pods: V1Pod[], over: Partial<JobSyncInput> = {}): JobSyncInput => ({
  job: j,
  pods,
  now: NOW,
  backoff: initialBackoff(j),
  expectationsSatisfied: true,
  ...over,
});
const types = (s: ReturnType<typeof syncJob>): string[] =>
  (s.status.conditions ?? []).filter((c) => c.status === 'True').map((c) => `${c.type}:${c.reason ?? ''}`);

test('a new Job starts min(parallelism, completions) pods and records its startTime', () => {
  const s = syncJob(input(job({ completions: 5, parallelism: 2 }), []));
  assert.equal(s.create.length, 2);
  assert.equal(s.status.active, 2);
  assert.equal(String(s.status.startTime), '2024-05-01T10:00:00Z');
});

test('running pods are topped up to what is left to complete; nothing is made while expectations are pending', () => {
  const j = job({ completions: 3, parallelism: 2 }, { startTime: '2024-05-01T09:00:00Z' as unknown as Date });
  const pods = [pod('Succeeded'), pod('Succeeded'), pod('Running', { ready: true })];
  const s = syncJob(input(j, pods));
  assert.deepEqual([s.create.length, s.remove.length, s.status.succeeded, s.status.ready], [0, 0, 2, 1]);
  const waiting = syncJob(input(j, [pod('Succeeded')], { expectationsSatisfied: false }));
  assert.equal(waiting.create.length, 0);
});

test('enough successes and nothing running: SuccessCriteriaMet and Complete with completionTime', () => {
  const s = syncJob(input(job({ completions: 2, parallelism: 2 }), [pod('Succeeded'), pod('Succeeded')]));
  assert.deepEqual(types(s), ['SuccessCriteriaMet:CompletionsReached', 'Complete:CompletionsReached']);
  assert.equal(String(s.status.completionTime), '2024-05-01T10:00:00Z');
  assert.equal(s.status.succeeded, 2);
});

test('without completions, the first success ends the Job once the other pods are done', () => {
  const j = job({ parallelism: 3 });
  const s = syncJob(input(j, [pod('Succeeded'), pod('Running'), pod('Running')]));
  assert.deepEqual([s.create.length, s.remove.length, types(s).length], [0, 0, 0]);
  const done = syncJob(input(j, [pod('Succeeded'), pod('Succeeded'), pod('Failed')]));
  assert.deepEqual(types(done), ['SuccessCriteriaMet:CompletionsReached', 'Complete:CompletionsReached']);
});

test('a failed pod is replaced after the backoff, 10 s doubling', () => {
  const j = job({ completions: 1, backoffLimit: 3 });
  const first = syncJob(input(j, [pod('Failed')]));
  assert.equal(first.create.length, 0);
  assert.equal(first.requeueAfterMs, 10_000);
  assert.deepEqual([first.status.failed, first.backoff.failures], [1, 1]);
  const later = syncJob(input(j, [pod('Failed')], { now: NOW + 10_000, backoff: first.backoff }));
  assert.equal(later.create.length, 1);
  const second = syncJob(input(j, [pod('Failed'), pod('Failed')], { now: NOW + 20_000, backoff: later.backoff }));
  assert.equal(second.requeueAfterMs, 20_000);
});

test('more failures than backoffLimit: the running pods are deleted and counted, then the Job is Failed', () => {
  const j = job({ completions: 2, parallelism: 2, backoffLimit: 1 });
  const running = pod('Running');
  const s = syncJob(input(j, [pod('Failed'), pod('Failed'), running]));
  assert.deepEqual(s.remove, [running]);
  assert.deepEqual(types(s), ['FailureTarget:BackoffLimitExceeded']);
  assert.equal(s.status.failed, 3);
  const after = job({ completions: 2, parallelism: 2, backoffLimit: 1 }, s.status);
  const done = syncJob(input(after, [pod('Failed'), pod('Failed')]));
  assert.deepEqual(types(done), ['FailureTarget:BackoffLimitExceeded', 'Failed:BackoffLimitExceeded']);
  assert.equal(done.status.completionTime, undefined);
  assert.equal(done.status.failed, 3);
});

test('activeDeadlineSeconds: the Job is looked at again when it runs out, then fails with DeadlineExceeded', () => {
  const j = job({ completions: 1, activeDeadlineSeconds: 30 }, { startTime: new Date(NOW) });
  const s = syncJob(input(j, [pod('Running')]));
  assert.equal(s.requeueAfterMs, 30_000);
  const late = syncJob(input(j, [pod('Running')], { now: NOW + 30_000 }));
  assert.deepEqual(types(late), ['FailureTarget:DeadlineExceeded']);
  assert.equal(late.remove.length, 1);
});

test('a failing Job counts the pods it deletes in a status written before the deletions, and counts them once', () => {
  const j = job({ completions: 2, parallelism: 2, activeDeadlineSeconds: 30 }, { startTime: new Date(NOW) });
  const running = [pod('Running'), pod('Running')];
  const first = syncJob(input(j, running, { now: NOW + 30_000 }));
  assert.equal(first.statusFirst, true);
  assert.equal(first.status.failed, 2);
  // The deletions not seen yet: the pods are deleted again, not counted again.
  const again = syncJob(input(job(j.spec!, first.status), running, { now: NOW + 31_000 }));
  assert.equal(again.statusFirst, false);
  assert.equal(again.remove.length, 2);
  assert.equal(again.status.failed, 2);
  // The pods gone, the Job fails with them counted.
  const gone = syncJob(input(job(j.spec!, again.status), [], { now: NOW + 32_000 }));
  assert.deepEqual(types(gone), ['FailureTarget:DeadlineExceeded', 'Failed:DeadlineExceeded']);
  assert.equal(gone.status.failed, 2);
});

test('a suspended Job deletes its pods without counting them failed; resuming restarts its clock', () => {
  const j = job({ completions: 2, suspend: true }, { startTime: '2024-05-01T09:00:00Z' as unknown as Date });
  const s = syncJob(input(j, [pod('Running'), pod('Running')]));
  assert.equal(s.remove.length, 2);
  assert.deepEqual([s.status.failed, s.status.active], [0, 0]);
  assert.deepEqual(types(s), ['Suspended:JobSuspended']);
  const resumed = syncJob(input(job({ completions: 2, parallelism: 1 }, s.status), []));
  assert.equal(resumed.create.length, 1);
  assert.equal(String(resumed.status.startTime), '2024-05-01T10:00:00Z');
  assert.deepEqual(
    resumed.status.conditions?.map((c) => [c.type, c.status, c.reason]),
    [['Suspended', 'False', 'JobResumed']],
  );
});

test('an Indexed Job runs each missing index once and reports completedIndexes', () => {
  const j = job({ completions: 5, parallelism: 3, completionMode: 'Indexed' });
  const s = syncJob(
    input(j, [pod('Succeeded', { index: 0 }), pod('Running', { index: 2 }), pod('Running', { index: 2 })]),
  );
  assert.deepEqual(s.create, [1, 3]);
  assert.equal(s.remove.length, 1, 'the second pod of index 2 goes');
  assert.equal(s.status.completedIndexes, '0');
  assert.equal(formatIndexes(parseIndexes('0,2-4,7', 10)), '0,2-4,7');
  assert.equal(formatIndexes(parseIndexes('0,2-4,7', 4)), '0,2-3');
});
