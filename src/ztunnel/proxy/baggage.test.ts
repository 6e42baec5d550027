import { test } from 'node:test';
import assert from 'node:assert/strict';
import { NO_BAGGAGE, parseBaggage } from './baggage.js';

test('baggage items fill their fields across header values; the workload name comes under any workload type', () => {
  assert.deepEqual(parseBaggage(['k8s.cluster.name=K1,k8s.namespace.name=NS1', 'k8s.job.name=J,service.name=S']), {
    ...NO_BAGGAGE,
    clusterId: 'K1',
    namespace: 'NS1',
    workloadName: 'J',
    serviceName: 'S',
  });
  assert.equal(parseBaggage(['k8s.cronjob.name=C']).workloadName, 'C');
  assert.equal(parseBaggage(['k8s.deployment.name=D']).workloadName, 'D');
  assert.equal(parseBaggage(['k8s.pod.name=P']).workloadName, 'P');
});

test('baggage as ztunnel parses it: empty values clear, later items win, unknown keys and spaces are not read', () => {
  assert.deepEqual(parseBaggage(['service.name=,service.version=']), NO_BAGGAGE);
  assert.equal(parseBaggage(['k8s.namespace.name=a', 'k8s.namespace.name=b']).namespace, 'b');
  assert.equal(parseBaggage(['k8s.namespace.name=a,k8s.namespace.name=']).namespace, undefined);
  assert.equal(parseBaggage(['k8s.statefulset.name=s,constructor=x,noequals']).workloadName, undefined);
  assert.equal(parseBaggage(['k8s.cluster.name=a, k8s.namespace.name=b']).namespace, undefined);
  assert.equal(parseBaggage(['service.name=a=b']).serviceName, 'a');
});
