import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Strategy } from './strategy.js';
import type { KubeObject } from '../kube-object.js';
import { cronJobStrategy } from './cron-job.js';
import { deploymentStrategy } from './deployment.js';
import { jobStrategy } from './job.js';
import { replicaSetStrategy } from './replica-set.js';

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

test('CronJob: schedule required and parsed, concurrency policy enum, names short enough for their Jobs', () => {
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
