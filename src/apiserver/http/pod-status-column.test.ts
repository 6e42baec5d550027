import assert from 'node:assert/strict';
import { test } from 'node:test';
import { podStatusColumn } from './pod-status-column.js';
import type { KubeObject } from '../kube-object.js';

const pod = (status: Record<string, unknown>, meta: Record<string, unknown> = {}): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'p', ...meta },
  spec: { initContainers: [{ name: 'a' }, { name: 'b' }], containers: [{ name: 'app' }] },
  status,
});
const done = { state: { terminated: { exitCode: 0, reason: 'Completed' } } };

test('kubectl shows Init:<done>/<all> while init containers run, and a failing one by its reason', () => {
  const waiting = { state: { waiting: { reason: 'PodInitializing' } } };
  assert.equal(podStatusColumn(pod({ phase: 'Pending', initContainerStatuses: [waiting, waiting] })), 'Init:0/2');
  assert.equal(podStatusColumn(pod({ phase: 'Pending', initContainerStatuses: [done, waiting] })), 'Init:1/2');
  const failed = { state: { terminated: { exitCode: 1, reason: 'Error' } } };
  assert.equal(podStatusColumn(pod({ phase: 'Pending', initContainerStatuses: [failed, waiting] })), 'Init:Error');
  const backoff = { state: { waiting: { reason: 'CrashLoopBackOff' } } };
  assert.equal(
    podStatusColumn(pod({ phase: 'Pending', initContainerStatuses: [backoff, waiting] })),
    'Init:CrashLoopBackOff',
  );
});

test('kubectl shows an app container waiting reason, else the phase, and Terminating for a pod being deleted', () => {
  const initialized = { type: 'Initialized', status: 'True' };
  const running = { ready: true, state: { running: {} } };
  const base = { initContainerStatuses: [done, done], conditions: [initialized] };
  assert.equal(podStatusColumn(pod({ ...base, phase: 'Running', containerStatuses: [running] })), 'Running');
  const crash = { state: { waiting: { reason: 'CrashLoopBackOff' } } };
  assert.equal(podStatusColumn(pod({ ...base, phase: 'Running', containerStatuses: [crash] })), 'CrashLoopBackOff');
  const deleting = { deletionTimestamp: '2025-01-01T00:00:00Z' };
  assert.equal(podStatusColumn(pod({ ...base, phase: 'Running' }, deleting)), 'Terminating');
  assert.equal(podStatusColumn(pod({ ...base, phase: 'Succeeded' }, deleting)), 'Succeeded');
});
