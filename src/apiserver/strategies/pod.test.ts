import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeObject } from '../kube-object.js';
import { podStrategy } from './pod.js';

function pod(spec: unknown): KubeObject {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web', namespace: 'default', resourceVersion: '1' }, spec };
}

function created(spec: unknown): KubeObject {
  const p = pod(spec);
  podStrategy.prepareForCreate!(p);
  return p;
}

test('create: Pending with a QoS class, generation 1, the defaults kubectl shows', () => {
  const p = created({
    containers: [
      { name: 'app', image: 'nginx', ports: [{ containerPort: 80 }], readinessProbe: { httpGet: { port: 80 } } },
    ],
  });
  assert.deepEqual(p.status, { phase: 'Pending', qosClass: 'BestEffort' });
  assert.equal(p.metadata.generation, 1);
  assert.deepEqual(p.spec, {
    containers: [
      {
        name: 'app',
        image: 'nginx',
        ports: [{ containerPort: 80, protocol: 'TCP' }],
        readinessProbe: {
          httpGet: { port: 80, path: '/', scheme: 'HTTP' },
          timeoutSeconds: 1,
          periodSeconds: 10,
          successThreshold: 1,
          failureThreshold: 3,
        },
        terminationMessagePath: '/dev/termination-log',
        terminationMessagePolicy: 'File',
        imagePullPolicy: 'Always',
        resources: {},
      },
    ],
    dnsPolicy: 'ClusterFirst',
    restartPolicy: 'Always',
    terminationGracePeriodSeconds: 30,
    securityContext: {},
    schedulerName: 'default-scheduler',
    enableServiceLinks: true,
    serviceAccountName: 'default',
    serviceAccount: 'default',
  });
});

test('imagePullPolicy defaults to Always only for :latest or untagged images; QoS from requests and limits', () => {
  const policy = (image: string): unknown =>
    (created({ containers: [{ name: 'a', image }] }).spec as { containers: { imagePullPolicy: string }[] })
      .containers[0]!.imagePullPolicy;
  assert.equal(policy('nginx'), 'Always');
  assert.equal(policy('nginx:latest'), 'Always');
  assert.equal(policy('nginx:1.27'), 'IfNotPresent');
  assert.equal(policy('registry:5000/nginx'), 'Always');
  assert.equal(policy('nginx@sha256:abc'), 'IfNotPresent');
  const qos = (resources: unknown): unknown =>
    (created({ containers: [{ name: 'a', image: 'x', resources }] }).status as { qosClass: string }).qosClass;
  assert.equal(qos({ limits: { cpu: '1', memory: '1Gi' } }), 'Guaranteed');
  assert.equal(qos({ requests: { cpu: '1' } }), 'Burstable');
});

test('validate: containers required, each with a name and an image, unique names, ports in range, enums', () => {
  const table: [unknown, [string, string][]][] = [
    [{}, [['spec.containers', 'Required value']]],
    [
      { containers: [{ name: 'a', image: 'x' }, { name: 'a' }] },
      [
        ['spec.containers[1].name', 'Duplicate value: "a"'],
        ['spec.containers[1].image', 'Required value'],
      ],
    ],
    [{ containers: [{ image: 'x' }] }, [['spec.containers[0].name', 'Required value']]],
    [
      { containers: [{ name: 'a', image: 'x', ports: [{ containerPort: 70000 }] }] },
      [['spec.containers[0].ports[0].containerPort', 'Invalid value: 70000: must be between 1 and 65535, inclusive']],
    ],
    [
      { containers: [{ name: 'a', image: 'x', ports: [{ containerPort: 80, protocol: 'HTTP' }] }] },
      [['spec.containers[0].ports[0].protocol', 'Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP"']],
    ],
    [
      { containers: [{ name: 'a', image: 'x' }], restartPolicy: 'Sometimes' },
      [['spec.restartPolicy', 'Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"']],
    ],
    [
      { initContainers: [{ name: 'a', image: 'x' }], containers: [{ name: 'a', image: 'y' }] },
      [['spec.containers[0].name', 'Duplicate value: "a"']],
    ],
  ];
  for (const [spec, want] of table) {
    const p = created(spec);
    assert.deepEqual(
      podStrategy.validate!(p).map((c) => [c.field, c.message]),
      want,
      JSON.stringify(spec),
    );
  }
});

test('update: only images, a shorter deadline and added tolerations may change; status is kept', () => {
  const old = created({
    containers: [{ name: 'a', image: 'nginx:1' }],
    tolerations: [{ key: 'k', operator: 'Exists' }],
  });
  old.status = { phase: 'Running', podIP: '10.0.0.5' };
  const update = (mutate: (spec: Record<string, unknown>) => void): KubeObject => {
    const now = structuredClone(old);
    delete now.status;
    mutate(now.spec as Record<string, unknown>);
    podStrategy.prepareForUpdate!(now, old);
    return now;
  };
  const image = update((s) => ((s.containers as { image: string }[])[0]!.image = 'nginx:2'));
  assert.deepEqual(podStrategy.validateUpdate!(image, old), []);
  assert.deepEqual(image.status, { phase: 'Running', podIP: '10.0.0.5' });
  assert.equal(image.metadata.generation, 2);
  const tolerations = update(
    (s) =>
      (s.tolerations = [
        { key: 'k', operator: 'Exists' },
        { key: 'n', operator: 'Exists' },
      ]),
  );
  assert.deepEqual(podStrategy.validateUpdate!(tolerations, old), []);
  const removed = update((s) => (s.tolerations = []));
  assert.deepEqual(
    podStrategy.validateUpdate!(removed, old).map((c) => c.message),
    ['Forbidden: existing toleration can not be modified except its tolerationSeconds'],
  );

  const node = update((s) => (s.nodeName = 'node-2'));
  const errs = podStrategy.validateUpdate!(node, old);
  assert.equal(errs.length, 1);
  assert.equal(errs[0]!.field, 'spec');
  assert.equal(errs[0]!.reason, 'FieldValueForbidden');
  assert.ok(
    errs[0]!.message.startsWith(
      'Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)\n',
    ),
  );
  assert.ok(errs[0]!.message.includes('+  nodeName: "node-2"'));

  const added = update((s) => (s.containers as unknown[]).push({ name: 'b', image: 'x' }));
  assert.deepEqual(
    podStrategy.validateUpdate!(added, old).map((c) => [c.field, c.message]),
    [['spec.containers', 'Forbidden: pod updates may not add or remove containers']],
  );
  const deadline = update((s) => (s.activeDeadlineSeconds = 30));
  assert.deepEqual(podStrategy.validateUpdate!(deadline, old), []);
  const longer = update((s) => (s.activeDeadlineSeconds = 60));
  assert.deepEqual(
    podStrategy.validateUpdate!(longer, deadline).map((c) => c.message),
    ['Invalid value: 60: must be less than or equal to previous value'],
  );
});
