import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Strategy } from './strategy.js';
import type { KubeObject } from '../kube-object.js';
import { controllerRevisionStrategy } from './controller-revision.js';
import { cronJobStrategy } from './cron-job.js';
import { daemonSetStrategy } from './daemon-set.js';
import { deploymentStrategy } from './deployment.js';
import { jobStrategy } from './job.js';
import { leaseStrategy } from './lease.js';
import { replicaSetStrategy } from './replica-set.js';
import { statefulSetStrategy } from './stateful-set.js';

function object(kind: string, spec: unknown, uid = 'uid-1'): KubeObject {
  return {
    apiVersion: kind === 'Job' || kind === 'CronJob' ? 'batch/v1' : 'apps/v1',
    kind,
    metadata: { name: 'web', namespace: 'default', uid, resourceVersion: '1' },
    spec,
  };
}

function created(strategy: Strategy, kind: string, spec: unknown): KubeObject {
  const o = object(kind, spec);
  strategy.prepareForCreate!(o);
  return o;
}

function fieldsAndMessages(list: { field?: string; message: string }[]): [string | undefined, string][] {
  return list.map((c) => [c.field, c.message]);
}

const TEMPLATE = { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'app', image: 'nginx:1' }] } };

test('Deployment create: replicas 1, RollingUpdate 25%/25%, history 10, deadline 600, generation 1, status {}', () => {
  const d = created(deploymentStrategy, 'Deployment', {
    selector: { matchLabels: { app: 'web' } },
    template: structuredClone(TEMPLATE),
  });
  const spec = d.spec as Record<string, unknown>;
  assert.deepEqual(
    [spec.replicas, spec.strategy, spec.revisionHistoryLimit, spec.progressDeadlineSeconds],
    [1, { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: '25%', maxSurge: '25%' } }, 10, 600],
  );
  assert.equal((spec.template as { spec: { restartPolicy: string } }).spec.restartPolicy, 'Always');
  assert.deepEqual([d.metadata.generation, d.status], [1, {}]);
  assert.deepEqual(deploymentStrategy.validate!(d), []);
});

test('Deployment and ReplicaSet: the selector is required, non-empty, and must match the template labels', () => {
  for (const [strategy, kind] of [
    [deploymentStrategy, 'Deployment'],
    [replicaSetStrategy, 'ReplicaSet'],
  ] as const) {
    const table: [unknown, [string, string][]][] = [
      [{ template: structuredClone(TEMPLATE) }, [['spec.selector', 'Required value']]],
      [
        { selector: {}, template: structuredClone(TEMPLATE) },
        [
          [
            'spec.selector',
            'Invalid value: &LabelSelector{MatchLabels:map[string]string{},MatchExpressions:[]LabelSelectorRequirement{},}: empty selector is invalid for deployment',
          ],
        ],
      ],
      [
        { selector: { matchLabels: { app: 'api' } }, template: structuredClone(TEMPLATE) },
        [
          [
            'spec.template.metadata.labels',
            'Invalid value: map[string]string{"app":"web"}: `selector` does not match template `labels`',
          ],
        ],
      ],
      [
        {
          selector: { matchExpressions: [{ key: 'app', operator: 'In', values: ['web', 'api'] }] },
          template: structuredClone(TEMPLATE),
        },
        [],
      ],
      [
        { selector: { matchExpressions: [{ key: 'app', operator: 'Near' }] }, template: structuredClone(TEMPLATE) },
        [
          ['spec.selector.matchExpressions[0].operator', 'Invalid value: "Near": not a valid selector operator'],
          [
            'spec.selector',
            'Invalid value: &LabelSelector{MatchLabels:map[string]string{},MatchExpressions:[]LabelSelectorRequirement{LabelSelectorRequirement{Key:app,Operator:Near,Values:[],},},}: invalid label selector',
          ],
        ],
      ],
      [
        {
          selector: { matchLabels: { app: 'web' } },
          template: {
            ...structuredClone(TEMPLATE),
            spec: { containers: [{ name: 'a', image: 'x' }], restartPolicy: 'Never' },
          },
        },
        [['spec.template.spec.restartPolicy', 'Unsupported value: "Never": supported values: "Always"']],
      ],
      [
        { selector: { matchLabels: { app: 'web' } }, replicas: -1, template: structuredClone(TEMPLATE) },
        [['spec.replicas', 'Invalid value: -1: must be greater than or equal to 0']],
      ],
    ];
    for (const [spec, want] of table)
      assert.deepEqual(
        fieldsAndMessages(strategy.validate!(created(strategy, kind, spec))),
        want,
        `${kind} ${JSON.stringify(spec)}`,
      );
  }
});

test('Deployment update: status kept, generation counts spec and annotation changes, the selector is immutable', () => {
  const old = created(deploymentStrategy, 'Deployment', {
    selector: { matchLabels: { app: 'web' } },
    template: structuredClone(TEMPLATE),
  });
  old.status = { replicas: 1, readyReplicas: 1 };
  const same = object('Deployment', { selector: { matchLabels: { app: 'web' } }, template: structuredClone(TEMPLATE) });
  deploymentStrategy.prepareForUpdate!(same, old);
  assert.deepEqual([same.metadata.generation, same.status], [1, { replicas: 1, readyReplicas: 1 }]);
  const annotated = structuredClone(same);
  annotated.metadata.annotations = { note: 'x' };
  deploymentStrategy.prepareForUpdate!(annotated, old);
  assert.equal(annotated.metadata.generation, 2);
  const moved = object('Deployment', {
    selector: { matchLabels: { app: 'web', tier: 'a' } },
    template: { ...structuredClone(TEMPLATE), metadata: { labels: { app: 'web', tier: 'a' } } },
  });
  deploymentStrategy.prepareForUpdate!(moved, old);
  assert.deepEqual(fieldsAndMessages(deploymentStrategy.validateUpdate!(moved, old)), [
    [
      'spec.selector',
      'Invalid value: &LabelSelector{MatchLabels:map[string]string{app: web,tier: a,},MatchExpressions:[]LabelSelectorRequirement{},}: field is immutable',
    ],
  ]);
  assert.equal(moved.metadata.generation, 2);
});

test('Job: defaults, a selector generated from the uid, pods that restart OnFailure or Never, an immutable template', () => {
  const job = created(jobStrategy, 'Job', {
    template: { spec: { containers: [{ name: 'a', image: 'busybox' }], restartPolicy: 'Never' } },
  });
  assert.deepEqual(jobStrategy.validate!(job), []);
  const spec = job.spec as Record<string, unknown>;
  assert.deepEqual(
    [
      spec.completions,
      spec.parallelism,
      spec.backoffLimit,
      spec.completionMode,
      spec.suspend,
      spec.podReplacementPolicy,
    ],
    [1, 1, 6, 'NonIndexed', false, 'TerminatingOrFailed'],
  );
  assert.deepEqual(spec.selector, { matchLabels: { 'batch.kubernetes.io/controller-uid': 'uid-1' } });
  assert.deepEqual((spec.template as { metadata: unknown }).metadata, {
    labels: {
      'job-name': 'web',
      'batch.kubernetes.io/job-name': 'web',
      'controller-uid': 'uid-1',
      'batch.kubernetes.io/controller-uid': 'uid-1',
    },
  });

  const always = created(jobStrategy, 'Job', { template: { spec: { containers: [{ name: 'a', image: 'busybox' }] } } });
  assert.deepEqual(fieldsAndMessages(jobStrategy.validate!(always)), [
    ['spec.template.spec.restartPolicy', 'Unsupported value: "Always": supported values: "OnFailure", "Never"'],
  ]);

  const own = created(jobStrategy, 'Job', {
    selector: { matchLabels: { app: 'x' } },
    template: {
      metadata: { labels: { app: 'x' } },
      spec: { containers: [{ name: 'a', image: 'b' }], restartPolicy: 'Never' },
    },
  });
  assert.deepEqual(fieldsAndMessages(jobStrategy.validate!(own)), [
    [
      'spec.selector',
      'Invalid value: &LabelSelector{MatchLabels:map[string]string{app: x,batch.kubernetes.io/controller-uid: uid-1,},MatchExpressions:[]LabelSelectorRequirement{},}: `selector` not auto-generated',
    ],
  ]);

  const changed = structuredClone(job);
  (changed.spec as { template: { spec: { containers: { image: string }[] } } }).template.spec.containers[0]!.image =
    'busybox:2';
  jobStrategy.prepareForUpdate!(changed, job);
  assert.deepEqual(
    jobStrategy.validateUpdate!(changed, job).map((c) => [c.field, c.message.endsWith(': field is immutable')]),
    [['spec.template', true]],
  );
});

test('CronJob: schedule required and read by the cron parser, a known time zone, concurrency policy enum, names short enough for their Jobs', () => {
  const spec = (extra: Record<string, unknown>): unknown => ({
    jobTemplate: {
      spec: { template: { spec: { containers: [{ name: 'a', image: 'b' }], restartPolicy: 'OnFailure' } } },
    },
    ...extra,
  });
  const ok = created(cronJobStrategy, 'CronJob', spec({ schedule: '*/5 * * * *' }));
  assert.deepEqual(cronJobStrategy.validate!(ok), []);
  assert.deepEqual((ok.spec as Record<string, unknown>).successfulJobsHistoryLimit, 3);
  const table: [unknown, [string, string][]][] = [
    [spec({}), [['spec.schedule', 'Required value']]],
    [
      spec({ schedule: '* * *' }),
      [['spec.schedule', 'Invalid value: "* * *": expected exactly 5 fields, found 3: [* * *]']],
    ],
    [
      spec({ schedule: '61 * * * *' }),
      [['spec.schedule', 'Invalid value: "61 * * * *": end of range (61) above maximum (59): 61']],
    ],
    [
      spec({ schedule: '@daily', timeZone: 'Mars/Olympus' }),
      [['spec.timeZone', 'Invalid value: "Mars/Olympus": unknown time zone Mars/Olympus']],
    ],
    [
      spec({ schedule: '@daily', timeZone: 'Local' }),
      [
        [
          'spec.timeZone',
          'Invalid value: "Local": timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones',
        ],
      ],
    ],
    [spec({ schedule: '0 9 * * MON-FRI', timeZone: 'Europe/Berlin' }), []],
    [
      spec({ schedule: '@daily', concurrencyPolicy: 'Sometimes' }),
      [['spec.concurrencyPolicy', 'Unsupported value: "Sometimes": supported values: "Allow", "Forbid", "Replace"']],
    ],
  ];
  for (const [s, want] of table)
    assert.deepEqual(
      fieldsAndMessages(cronJobStrategy.validate!(created(cronJobStrategy, 'CronJob', s))),
      want,
      JSON.stringify(s),
    );
  const long = created(cronJobStrategy, 'CronJob', spec({ schedule: '@hourly' }));
  long.metadata.name = 'a'.repeat(53);
  assert.deepEqual(fieldsAndMessages(cronJobStrategy.validate!(long)), [
    ['metadata.name', `Invalid value: "${'a'.repeat(53)}": must be no more than 52 characters`],
  ]);
});

test('DaemonSet: RollingUpdate 1/0 and history 10 by default; an empty selector, a non-Always pod, a bad strategy refused', () => {
  const ds = created(daemonSetStrategy, 'DaemonSet', {
    selector: { matchLabels: { app: 'web' } },
    template: structuredClone(TEMPLATE),
  });
  const spec = ds.spec as Record<string, unknown>;
  assert.deepEqual(
    [spec.updateStrategy, spec.revisionHistoryLimit, ds.metadata.generation],
    [{ type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1, maxSurge: 0 } }, 10, 1],
  );
  assert.deepEqual(daemonSetStrategy.validate!(ds), []);
  const bad = (patch: Record<string, unknown>): [string | undefined, string][] =>
    fieldsAndMessages(daemonSetStrategy.validate!(object('DaemonSet', { ...spec, ...patch })));
  assert.deepEqual(
    bad({ selector: {} }).map(([f, m]) => [f, m.replace(/^Invalid value: .*?: /, '')]),
    [['spec.selector', 'empty selector is invalid for daemonset']],
  );
  const podSpec = (spec.template as { spec: object }).spec;
  assert.deepEqual(bad({ template: { ...TEMPLATE, spec: { ...podSpec, restartPolicy: 'Never' } } }), [
    ['spec.template.spec.restartPolicy', 'Unsupported value: "Never": supported values: "Always"'],
  ]);
  assert.deepEqual(bad({ updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0 } } }), [
    ['spec.updateStrategy.rollingUpdate.maxUnavailable', 'Invalid value: 0: may not be 0 when `maxSurge` is 0'],
  ]);
  assert.deepEqual(bad({ updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: '120%' } } }), [
    ['spec.updateStrategy.rollingUpdate.maxUnavailable', 'Invalid value: "120%": must not be greater than 100%'],
  ]);
  assert.equal(bad({ updateStrategy: { type: 'Recreate' } })[0]?.[0], 'spec.updateStrategy');
});

test('StatefulSet: OrderedReady, RollingUpdate from partition 0, 1 replica by default; only some spec fields may change', () => {
  const sts = created(statefulSetStrategy, 'StatefulSet', {
    serviceName: 'web',
    selector: { matchLabels: { app: 'web' } },
    template: structuredClone(TEMPLATE),
  });
  const spec = sts.spec as Record<string, unknown>;
  assert.deepEqual(
    [spec.podManagementPolicy, spec.updateStrategy, spec.replicas, spec.persistentVolumeClaimRetentionPolicy],
    [
      'OrderedReady',
      { type: 'RollingUpdate', rollingUpdate: { partition: 0 } },
      1,
      { whenDeleted: 'Retain', whenScaled: 'Retain' },
    ],
  );
  assert.deepEqual(statefulSetStrategy.validate!(sts), []);
  const scaled = structuredClone(sts);
  (scaled.spec as Record<string, unknown>).replicas = 3;
  assert.deepEqual(statefulSetStrategy.validateUpdate!(scaled, sts), []);
  const renamed = structuredClone(sts);
  (renamed.spec as Record<string, unknown>).serviceName = 'other';
  assert.deepEqual(
    fieldsAndMessages(statefulSetStrategy.validateUpdate!(renamed, sts)).map(([f, m]) => [f, m.split(' for ')[0]]),
    [['spec', 'Forbidden: updates to statefulset spec']],
  );
  const parallel = object('StatefulSet', { ...spec, podManagementPolicy: 'Random' });
  assert.deepEqual(fieldsAndMessages(statefulSetStrategy.validate!(parallel)), [
    ['spec.podManagementPolicy', 'Unsupported value: "Random": supported values: "OrderedReady", "Parallel"'],
  ]);
});

test('ControllerRevision and Lease: data required and immutable, revision not negative; a lease lasts more than 0 s', () => {
  const rev = {
    apiVersion: 'apps/v1',
    kind: 'ControllerRevision',
    metadata: { name: 'r' },
    data: { a: 1 },
    revision: 1,
  };
  assert.deepEqual(controllerRevisionStrategy.validate!(rev), []);
  assert.deepEqual(fieldsAndMessages(controllerRevisionStrategy.validate!({ ...rev, data: undefined, revision: -1 })), [
    ['data', 'Required value'],
    ['revision', 'Invalid value: -1: must be greater than or equal to 0'],
  ]);
  assert.deepEqual(
    fieldsAndMessages(controllerRevisionStrategy.validateUpdate!({ ...rev, data: { a: 2 } }, rev)).map(([f]) => f),
    ['data'],
  );
  const lease = (spec: unknown): KubeObject => ({
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: { name: 'n' },
    spec,
  });
  assert.deepEqual(leaseStrategy.validate!(lease({ holderIdentity: 'n', leaseDurationSeconds: 40 })), []);
  assert.deepEqual(fieldsAndMessages(leaseStrategy.validate!(lease({ leaseDurationSeconds: 0 }))), [
    ['spec.leaseDurationSeconds', 'Invalid value: 0: must be greater than 0'],
  ]);
});
