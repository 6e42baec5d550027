import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError } from './api-error.js';
import { findKind } from './kinds.js';
import type { KindInfo } from './kind-info.js';
import type { KubeObject } from './kube-object.js';
import { applyStrategicMergePatch, supportsStrategicMergePatch } from './strategic-merge-patch.js';

function kind(group: string, plural: string): KindInfo {
  const k = findKind(group, 'v1', plural);
  assert.ok(k, plural);
  return k;
}
const DEPLOYMENTS = kind('apps', 'deployments');
const PODS = kind('', 'pods');
const CONFIGMAPS = kind('', 'configmaps');

const deployment = (): KubeObject => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'web', namespace: 'shop', labels: { app: 'web' }, finalizers: ['a', 'b'] },
  spec: {
    replicas: 1,
    strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: '25%', maxUnavailable: '25%' } },
    template: {
      metadata: { labels: { app: 'web' } },
      spec: {
        containers: [
          {
            name: 'app',
            image: 'web:1',
            env: [
              { name: 'A', value: '1' },
              { name: 'B', value: '2' },
            ],
            ports: [{ containerPort: 80 }],
          },
          { name: 'sidecar', image: 'proxy:1' },
        ],
        volumes: [{ name: 'data', emptyDir: {} }],
        tolerations: [{ key: 'a', operator: 'Exists' }],
      },
    },
  },
});

type Json = Record<string, unknown>;
const podSpec = (d: KubeObject): Json => ((d.spec as Json).template as Json).spec as Json;

test('applyStrategicMergePatch: a kubectl apply 3-way patch ($setElementOrder, $patch: delete, $retainKeys) does what the API server does', () => {
  // What kubectl apply sends when the manifest bumps the image, drops env B, adds env C before the sidecar's
  // order is restated, switches the strategy to Recreate and the volume from emptyDir to a ConfigMap.
  const patch = {
    metadata: { annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{}' } },
    spec: {
      strategy: { $retainKeys: ['type'], rollingUpdate: null, type: 'Recreate' },
      template: {
        spec: {
          '$setElementOrder/containers': [{ name: 'app' }, { name: 'sidecar' }],
          '$setElementOrder/volumes': [{ name: 'data' }],
          containers: [
            {
              '$setElementOrder/env': [{ name: 'A' }, { name: 'C' }],
              env: [
                { name: 'C', value: '3' },
                { $patch: 'delete', name: 'B' },
              ],
              image: 'web:2',
              name: 'app',
            },
          ],
          volumes: [{ $retainKeys: ['configMap', 'name'], configMap: { name: 'cfg' }, name: 'data' }],
        },
      },
    },
  };
  const input = deployment();
  const out = applyStrategicMergePatch(input, patch, DEPLOYMENTS);
  assert.deepEqual(input, deployment(), 'input unchanged');
  assert.deepEqual((out.spec as Json).strategy, { type: 'Recreate' });
  const spec = podSpec(out);
  assert.deepEqual(spec.containers, [
    {
      name: 'app',
      image: 'web:2',
      env: [
        { name: 'A', value: '1' },
        { name: 'C', value: '3' },
      ],
      ports: [{ containerPort: 80 }],
    },
    { name: 'sidecar', image: 'proxy:1' },
  ]);
  assert.deepEqual(spec.volumes, [{ name: 'data', configMap: { name: 'cfg' } }]);
  assert.deepEqual(spec.tolerations, [{ key: 'a', operator: 'Exists' }]);
  assert.deepEqual(out.metadata.annotations, { 'kubectl.kubernetes.io/last-applied-configuration': '{}' });
  assert.equal(JSON.stringify(out).includes('$'), false, 'no directive is left in the object');
});

test('applyStrategicMergePatch: $setElementOrder puts a reordered and extended list in the order it gives', () => {
  const patch = {
    spec: {
      template: {
        spec: {
          '$setElementOrder/containers': [{ name: 'sidecar' }, { name: 'new' }, { name: 'app' }],
          containers: [{ name: 'new', image: 'n:1' }],
        },
      },
    },
  };
  const names = (podSpec(applyStrategicMergePatch(deployment(), patch, DEPLOYMENTS)).containers as Json[]).map(
    (c) => c.name,
  );
  assert.deepEqual(names, ['sidecar', 'new', 'app']);
});

test('applyStrategicMergePatch: merge lists by key, replace untagged lists, merge scalar sets, delete with null', () => {
  const cases: [string, Json, (d: KubeObject) => void][] = [
    [
      'container ports merge by containerPort',
      {
        spec: {
          template: {
            spec: {
              containers: [{ name: 'app', ports: [{ containerPort: 80, name: 'http' }, { containerPort: 443 }] }],
            },
          },
        },
      },
      (d) =>
        assert.deepEqual((podSpec(d).containers as Json[])[0]!.ports, [
          { containerPort: 80, name: 'http' },
          { containerPort: 443 },
        ]),
    ],
    [
      'tolerations have no patch strategy: replaced whole',
      { spec: { template: { spec: { tolerations: [{ key: 'b', operator: 'Exists' }] } } } },
      (d) => assert.deepEqual(podSpec(d).tolerations, [{ key: 'b', operator: 'Exists' }]),
    ],
    [
      'finalizers merge as a set',
      { metadata: { finalizers: ['c', 'a'] } },
      (d) => assert.deepEqual(d.metadata.finalizers, ['c', 'a', 'b']),
    ],
    [
      '$deleteFromPrimitiveList removes scalars',
      { metadata: { '$deleteFromPrimitiveList/finalizers': ['a'] } },
      (d) => assert.deepEqual(d.metadata.finalizers, ['b']),
    ],
    [
      '$setElementOrder on a scalar list',
      {
        metadata: {
          '$setElementOrder/finalizers': ['c', 'b'],
          finalizers: ['c'],
          '$deleteFromPrimitiveList/finalizers': ['a'],
        },
      },
      (d) => assert.deepEqual(d.metadata.finalizers, ['c', 'b']),
    ],
    [
      'null deletes a field; null for a missing field adds nothing',
      { metadata: { labels: { app: null, gone: null } } },
      (d) => assert.deepEqual(d.metadata.labels, {}),
    ],
    [
      '$patch: replace on a map',
      { metadata: { labels: { $patch: 'replace', tier: 'front' } } },
      (d) => assert.deepEqual(d.metadata.labels, { tier: 'front' }),
    ],
    [
      '$patch: delete on a map',
      { metadata: { labels: { $patch: 'delete' } } },
      (d) => assert.deepEqual(d.metadata.labels, {}),
    ],
    [
      '$patch: replace in a merge list',
      { spec: { template: { spec: { containers: [{ name: 'only', image: 'o:1' }, { $patch: 'replace' }] } } } },
      (d) => assert.deepEqual(podSpec(d).containers, [{ name: 'only', image: 'o:1' }]),
    ],
    [
      'a new map field is taken from the patch without nulls or directives',
      { status: { x: { a: null, $patch: 'merge', b: 1 } } },
      (d) => assert.deepEqual(d.status, { x: { b: 1 } }),
    ],
    [
      'a type change replaces',
      { spec: { replicas: { odd: true } } },
      (d) => assert.deepEqual((d.spec as Json).replicas, { odd: true }),
    ],
  ];
  for (const [name, patch, check] of cases)
    assert.doesNotThrow(() => check(applyStrategicMergePatch(deployment(), patch, DEPLOYMENTS)), name);
});

test('applyStrategicMergePatch: upstream custom cases (duplicates deleted, lists and maps emptied)', () => {
  const pod = (spec: Json): KubeObject => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec });
  const dupes = pod({
    containers: [{ name: '1' }, { name: '1' }, { name: '2', image: 'a' }, { name: '3' }, { name: '3' }],
  });
  const deleted = applyStrategicMergePatch(
    dupes,
    {
      spec: {
        containers: [
          { name: '1', $patch: 'delete' },
          { name: '3', $patch: 'delete' },
        ],
      },
    },
    PODS,
  );
  assert.deepEqual((deleted.spec as Json).containers, [{ name: '2', image: 'a' }]);
  const emptied = applyStrategicMergePatch(
    pod({ containers: [{ name: '1' }, { name: '2' }] }),
    { spec: { containers: [{ $patch: 'replace' }] } },
    PODS,
  );
  assert.deepEqual((emptied.spec as Json).containers, []);
  // New scalars not yet on the server come before the server-only ones, as mergeSortedSlice orders them.
  const scalars = applyStrategicMergePatch(
    { ...deployment(), metadata: { name: 'x', finalizers: ['a', 'b', 'c'] } },
    { metadata: { finalizers: ['d', 'b'] } },
    DEPLOYMENTS,
  );
  assert.deepEqual(scalars.metadata.finalizers, ['d', 'a', 'b', 'c']);
  assert.deepEqual(
    applyStrategicMergePatch(
      pod({ a: 1 }),
      { $patch: 'replace', apiVersion: 'v1', kind: 'Pod', metadata: { name: 'q' } },
      PODS,
    ),
    {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'q' },
    },
  );
  assert.deepEqual(applyStrategicMergePatch(pod({}), null, PODS), pod({}));
});

test('applyStrategicMergePatch: bad directives are 400, lists of lists 422, other patch errors 500, as interpretStrategicMergePatchError', () => {
  const cm: KubeObject = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'c', finalizers: ['a'] },
    data: { a: '1' },
  };
  const cases: [Json | unknown[], string, number, string][] = [
    [{ data: { $retainKeys: 'a' } }, 'BadRequest', 400, 'invalid patch format of retainKeys'],
    [{ data: { $retainKeys: ['a'], b: '2' } }, 'BadRequest', 400, 'invalid patch format of retainKeys'],
    [{ metadata: { $deleteFromPrimitiveListX: ['a'] } }, 'BadRequest', 400, 'invalid patch format of primitive list'],
    [
      { metadata: { '$setElementOrder/finalizers': 'a' } },
      'InternalError',
      500,
      'expected a []interface {}, but received a string',
    ],
    [{ metadata: { $setElementOrderX: ['a'] } }, 'BadRequest', 400, 'invalid patch format of setElementOrder list'],
    [{ metadata: { finalizers: [['x']] } }, 'InternalError', 500, 'list element types are not identical: [[a] [[x]]]'],
    [{ metadata: { finalizers: ['x', 1] } }, 'InternalError', 500, 'list element types are not identical: [[a] [x 1]]'],
    [{ data: { $patch: 'merge' } }, 'InternalError', 500, 'unknown patch type: merge in map: map[$patch:merge]'],
    [
      { metadata: { ownerReferences: [{ name: 'x' }] } },
      'InternalError',
      500,
      'map: map[name:x] does not contain declared merge key: uid',
    ],
    [['x'], 'BadRequest', 400, 'json: cannot unmarshal array into Go value of type map[string]interface {}'],
  ];
  for (const [patch, reason, code, message] of cases) {
    assert.throws(
      () =>
        applyStrategicMergePatch(
          {
            ...cm,
            metadata: { ...cm.metadata, ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: 'p', uid: 'u' }] },
          },
          patch,
          CONFIGMAPS,
        ),
      (e: unknown) => {
        assert.ok(e instanceof ApiError, JSON.stringify(patch));
        assert.deepEqual([e.reason, e.code, e.message], [reason, code, message], JSON.stringify(patch));
        return true;
      },
    );
  }
  assert.throws(
    () =>
      applyStrategicMergePatch(
        { ...cm, metadata: { name: 'c', finalizers: [] } },
        { metadata: { finalizers: [['x']] } },
        CONFIGMAPS,
      ),
    (e: unknown) => {
      assert.ok(e instanceof ApiError);
      assert.deepEqual(
        [e.reason, e.code, e.message, (e.cause as Error).message],
        [
          'Invalid',
          422,
          'the server rejected our request due to an error in our request',
          'lists of lists are not supported',
        ],
      );
      return true;
    },
  );
  assert.throws(
    () =>
      applyStrategicMergePatch(
        deployment(),
        {
          spec: {
            template: {
              spec: { '$setElementOrder/containers': [{ name: 'app' }], containers: [{ name: 'sidecar', image: 'x' }] },
            },
          },
        },
        DEPLOYMENTS,
      ),
    {
      code: 500,
      message:
        "The order in patch list:\n[map[image:x name:sidecar]]\n doesn't match $setElementOrder list:\n[map[name:app]]\n",
    },
  );
});

test('supportsStrategicMergePatch: built-in kinds do; Istio and Gateway API custom resources get 415', () => {
  for (const [group, plural] of [
    ['', 'pods'],
    ['', 'services'],
    ['apps', 'deployments'],
    ['batch', 'cronjobs'],
    ['discovery.k8s.io', 'endpointslices'],
  ] as const) {
    assert.equal(supportsStrategicMergePatch(kind(group, plural)), true, plural);
  }
  const ap = kind('security.istio.io', 'authorizationpolicies');
  const route = kind('gateway.networking.k8s.io', 'httproutes');
  for (const k of [ap, route]) {
    assert.equal(supportsStrategicMergePatch(k), false);
    assert.throws(() => applyStrategicMergePatch({ apiVersion: 'x', kind: k.kind, metadata: { name: 'a' } }, {}, k), {
      reason: 'UnsupportedMediaType',
      code: 415,
      message:
        'the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json',
    });
  }
});
