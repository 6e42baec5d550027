import { test } from 'node:test';
import assert from 'node:assert/strict';
import { KINDS } from '../kinds.js';
import type { KubeObject } from '../kube-object.js';
import { customResourceStrategy } from './custom-resource.js';
import { eventStrategy } from './event.js';

function policy(spec: unknown): KubeObject {
  return {
    apiVersion: 'security.istio.io/v1',
    kind: 'AuthorizationPolicy',
    metadata: { name: 'allow', namespace: 'default' },
    spec,
  };
}

test('every Istio and Gateway API kind is served with the custom resource strategy, every built-in kind that needs one with its own', () => {
  for (const k of KINDS) {
    if (k.group.endsWith('istio.io') || k.group === 'gateway.networking.k8s.io')
      assert.equal(k.strategy, customResourceStrategy, k.kind);
    else if (!k.review && !['ServiceAccount'].includes(k.kind)) assert.notEqual(k.strategy, undefined, k.kind);
  }
});

test('custom resources are validated against their CRD schema: spec must be an object when present, refused as the schema validator words it', () => {
  assert.deepEqual(customResourceStrategy.validate!(policy({ action: 'ALLOW' })), []);
  assert.deepEqual(customResourceStrategy.validate!(policy(undefined)), []);
  assert.deepEqual(customResourceStrategy.validate!(policy('ALLOW')), [
    {
      reason: 'FieldValueTypeInvalid',
      field: 'spec',
      message: 'Invalid value: "string": spec in body must be of type object: "string"',
    },
  ]);
  assert.equal(
    customResourceStrategy.validate!(policy([1]))[0]!.message,
    'Invalid value: "array": spec in body must be of type object: "array"',
  );
  assert.deepEqual(
    customResourceStrategy.validate!(policy({ action: 'DENYX' })).map((c) => `${c.field ?? ''}: ${c.message}`),
    ['spec.action: Unsupported value: "DENYX": supported values: "ALLOW", "DENY", "AUDIT", "CUSTOM"'],
  );
});

test('custom resources: unknown fields are pruned and reported, defaults filled in', () => {
  const p = policy({ action: 'ALLOW', foo: 1 });
  assert.deepEqual(customResourceStrategy.prune!(p), ['spec.foo']);
  assert.deepEqual(p.spec, { action: 'ALLOW' });
});

test('custom resources: status dropped on create and kept on update; generation counts changes outside metadata and status', () => {
  const p = policy({ action: 'ALLOW' });
  p.status = { conditions: [] };
  customResourceStrategy.prepareForCreate!(p);
  assert.deepEqual([p.status, p.metadata.generation], [undefined, 1]);
  p.status = { validationMessages: [] };
  const relabeled = structuredClone(p);
  relabeled.metadata.labels = { a: 'b' };
  delete relabeled.status;
  customResourceStrategy.prepareForUpdate!(relabeled, p);
  assert.deepEqual([relabeled.status, relabeled.metadata.generation], [{ validationMessages: [] }, 1]);
  const denied = policy({ action: 'DENY' });
  customResourceStrategy.prepareForUpdate!(denied, p);
  assert.equal(denied.metadata.generation, 2);
});

test("core/v1 Events: an event without eventTime sits in its involved object's namespace", () => {
  const event = (namespace: string, involved: string | undefined): KubeObject => ({
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name: 'e', namespace },
    involvedObject: { kind: 'Pod', name: 'p', namespace: involved },
  });
  assert.deepEqual(eventStrategy.validate!(event('team-a', 'team-a')), []);
  assert.deepEqual(eventStrategy.validate!(event('default', undefined)), []);
  assert.deepEqual(
    eventStrategy.validate!(event('team-a', 'team-b')).map((c) => [c.field, c.message]),
    [['involvedObject.namespace', 'Invalid value: "team-b": does not match event.namespace']],
  );
});
