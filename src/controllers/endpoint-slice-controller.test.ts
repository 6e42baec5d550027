import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Pod, V1Service } from '@kubernetes/client-node';
import { desiredSlices } from './endpoint-slice-controller.js';

const service = (spec: V1Service['spec']): V1Service => ({ metadata: { name: 'web', namespace: 'ns' }, spec });
function pod(
  name: string,
  ips: string[],
  extra: { port?: number; restartPolicy?: string; phase?: string } = {},
): V1Pod {
  return {
    metadata: { name, namespace: 'ns', uid: `u-${name}`, labels: { app: 'web' } },
    spec: {
      restartPolicy: extra.restartPolicy,
      containers: [{ name: 'c', ports: extra.port === undefined ? [] : [{ name: 'http', containerPort: extra.port }] }],
    },
    status: { phase: extra.phase ?? 'Running', podIP: ips[0], podIPs: ips.map((ip) => ({ ip })) },
  };
}

test('desired slices: grouped by the ports each pod resolves, at most 100 endpoints each, one set per IP family', () => {
  const pods = [
    ...Array.from({ length: 150 }, (_, i) =>
      pod(`a-${String(i).padStart(3, '0')}`, [`10.0.${String(i >> 8)}.${String(i & 255)}`], { port: 8080 }),
    ),
    pod('b', ['10.1.0.1', 'fd00::1'], { port: 9090 }),
    pod('no-port', ['10.1.0.2']),
  ];
  const slices = desiredSlices(
    service({
      selector: { app: 'web' },
      ipFamilies: ['IPv4', 'IPv6'],
      ports: [{ name: 'http', port: 80, targetPort: 'http' }],
    }),
    pods,
  );
  assert.deepEqual(
    slices.map((s) => [s.addressType, s.ports.map((p) => p.port), s.endpoints.length]),
    [
      ['IPv4', [8080], 100],
      ['IPv4', [8080], 50],
      ['IPv4', [9090], 1],
      ['IPv4', [], 1],
      ['IPv6', [9090], 1],
    ],
    'a pod whose named target port is missing still serves, with no ports',
  );
  assert.deepEqual(slices[4]!.endpoints[0]!.addresses, ['fd00::1']);
});

test('desired slices: finished pods of restartPolicy Never or OnFailure, and pods without an IP, are left out', () => {
  const slices = desiredSlices(service({ selector: { app: 'web' }, ports: [{ port: 80 }] }), [
    pod('never-failed', ['10.0.0.1'], { restartPolicy: 'Never', phase: 'Failed' }),
    pod('onfailure-succeeded', ['10.0.0.2'], { restartPolicy: 'OnFailure', phase: 'Succeeded' }),
    pod('onfailure-failed', ['10.0.0.3'], { restartPolicy: 'OnFailure', phase: 'Failed' }),
    pod('no-ip', []),
  ]);
  assert.deepEqual(
    slices.flatMap((s) => s.endpoints.map((e) => e.targetRef?.name)),
    ['onfailure-failed'],
  );
});

test('desired slices: publishNotReadyAddresses makes an unready pod ready and serving', () => {
  const [s] = desiredSlices(service({ selector: { app: 'web' }, publishNotReadyAddresses: true }), [
    pod('a', ['10.0.0.1']),
  ]);
  assert.deepEqual(s?.endpoints[0]?.conditions, { ready: true, serving: true, terminating: false });
});
