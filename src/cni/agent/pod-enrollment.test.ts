import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import {
  isPodTerminal,
  isZtunnelPod,
  podFullyEnrolled,
  podIps,
  podPartiallyEnrolled,
  workloadInfo,
} from './pod-enrollment.js';

const pod = (annotations: Record<string, string> = {}, status: V1Pod['status'] = {}): V1Pod => ({
  metadata: { name: 'p', namespace: 'ns', annotations },
  spec: { containers: [] },
  status,
});

test("enrolled and pending are the agent's redirection annotation", () => {
  assert.deepEqual(
    [
      podFullyEnrolled(pod({ 'ambient.istio.io/redirection': 'enabled' })),
      podPartiallyEnrolled(pod({ 'ambient.istio.io/redirection': 'enabled' })),
    ],
    [true, false],
  );
  assert.deepEqual(
    [
      podFullyEnrolled(pod({ 'ambient.istio.io/redirection': 'pending' })),
      podPartiallyEnrolled(pod({ 'ambient.istio.io/redirection': 'pending' })),
    ],
    [false, true],
  );
  assert.deepEqual([podFullyEnrolled(pod()), podPartiallyEnrolled(pod())], [false, false]);
});

test('podIPs is preferred to podIP; a pod without either has none', () => {
  assert.deepEqual(podIps(pod({}, { podIP: '10.0.0.1', podIPs: [{ ip: '10.0.0.1' }, { ip: 'fd00::1' }] })), [
    '10.0.0.1',
    'fd00::1',
  ]);
  assert.deepEqual(podIps(pod({}, { podIP: '10.0.0.1' })), ['10.0.0.1']);
  assert.deepEqual(podIps(pod()), []);
});

test('terminal is Succeeded or Failed; ztunnel is app=ztunnel in the system namespace', () => {
  assert.deepEqual(
    ['Running', 'Pending', 'Succeeded', 'Failed'].map((phase) => isPodTerminal(pod({}, { phase }))),
    [false, false, true, true],
  );
  const zt: V1Pod = { metadata: { name: 'ztunnel-x', namespace: 'istio-system', labels: { app: 'ztunnel' } } };
  assert.deepEqual([isZtunnelPod('istio-system', zt), isZtunnelPod('other', zt)], [true, false]);
});

test("ZDS WorkloadInfo is the pod's name, namespace and service account (default when unset)", () => {
  assert.deepEqual(workloadInfo(pod()), { name: 'p', namespace: 'ns', serviceAccount: 'default' });
});
