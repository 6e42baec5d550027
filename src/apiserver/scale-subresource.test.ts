import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError } from './api-error.js';
import { findKind } from './kinds.js';
import type { KindInfo } from './kind-info.js';
import type { KubeObject } from './kube-object.js';
import { applyScale, scaleOf, selectorString } from './scale-subresource.js';

const DEPLOYMENTS = findKind('apps', 'v1', 'deployments') as KindInfo;
const deployment = (replicas: number): KubeObject => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: {
    name: 'web',
    namespace: 'shop',
    uid: 'u1',
    resourceVersion: '7',
    creationTimestamp: '2026-01-01T00:00:00Z',
  },
  spec: { replicas, selector: { matchLabels: { app: 'web', tier: 'front' } } },
  status: { replicas: 2 },
});
const conflict = (): ApiError => new ApiError('Conflict', 'stale');

test("a selector prints as LabelSelectorAsSelector's String(): sorted by key, values sorted, every operator", () => {
  assert.equal(
    selectorString({
      matchLabels: { z: '1', app: 'web' },
      matchExpressions: [
        { key: 'env', operator: 'In', values: ['prod', 'dev'] },
        { key: 'canary', operator: 'DoesNotExist' },
        { key: 'zone', operator: 'NotIn', values: ['b'] },
        { key: 'gpu', operator: 'Exists' },
      ],
    }),
    'app=web,!canary,env in (dev,prod),gpu,z=1,zone notin (b)',
  );
  assert.equal(selectorString(undefined), '');
});

test("a Deployment's Scale carries its identity, spec and status replicas and its selector; zero replicas leave the spec empty", () => {
  assert.deepEqual(scaleOf(deployment(3)), {
    apiVersion: 'autoscaling/v1',
    kind: 'Scale',
    metadata: {
      name: 'web',
      namespace: 'shop',
      uid: 'u1',
      resourceVersion: '7',
      creationTimestamp: '2026-01-01T00:00:00Z',
    },
    spec: { replicas: 3 },
    status: { replicas: 2, selector: 'app=web,tier=front' },
  });
  assert.deepEqual(scaleOf(deployment(0)).spec, {});
});

test('a Scale update sets the replicas; a negative count, a stale resourceVersion or another uid are refused as kube refuses them', () => {
  const scale = (replicas: number, meta: KubeObject['metadata'] = {}): KubeObject => ({
    apiVersion: 'autoscaling/v1',
    kind: 'Scale',
    metadata: meta,
    spec: { replicas },
  });
  assert.equal((applyScale(DEPLOYMENTS, deployment(3), scale(5), conflict).spec as { replicas: number }).replicas, 5);
  assert.throws(
    () => applyScale(DEPLOYMENTS, deployment(3), scale(-1), conflict),
    (e: unknown) =>
      e instanceof ApiError &&
      e.code === 422 &&
      e.message ===
        'Scale.autoscaling "web" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0',
  );
  assert.throws(() => applyScale(DEPLOYMENTS, deployment(3), scale(5, { resourceVersion: '6' }), conflict), /stale/);
  assert.throws(
    () => applyScale(DEPLOYMENTS, deployment(3), scale(5, { uid: 'other' }), conflict),
    (e: unknown) =>
      e instanceof ApiError &&
      e.code === 409 &&
      e.message ===
        'Operation cannot be fulfilled on deployments/scale.apps "web": Precondition failed: UID in precondition: other, UID in object meta: u1',
  );
});
