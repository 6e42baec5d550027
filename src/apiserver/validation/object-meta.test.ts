import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError, invalid as invalidObject } from '../api-error.js';
import { findKind } from '../kinds.js';
import type { KindInfo } from '../kind-info.js';
import type { KubeObject, ObjectMeta } from '../kube-object.js';
import {
  ensureRequestNamespace,
  generatedName,
  immutable,
  validateObjectMeta,
  validateObjectMetaUpdate,
} from './object-meta.js';

function kind(group: string, plural: string): KindInfo {
  return findKind(group, 'v1', plural)!;
}
const POD = kind('', 'pods');
const NAMESPACE = kind('', 'namespaces');
const SERVICE = kind('', 'services');
const EVENT = kind('', 'events');
const NODE = kind('', 'nodes');
const AUTHZ_POLICY = kind('security.istio.io', 'authorizationpolicies');

function obj(k: KindInfo, metadata: ObjectMeta): KubeObject {
  return { apiVersion: k.group === '' ? 'v1' : `${k.group}/v1`, kind: k.kind, metadata };
}

/** [field, reason, message prefix] of each cause. */
function causes(list: { field?: string; reason: string; message: string }[]): [string | undefined, string, string][] {
  return list.map((c) => [c.field, c.reason, c.message]);
}

test('name rules per kind: pods subdomain, namespaces RFC 1123 label, services DNS-1035 label, core/v1 events any name', () => {
  const table: [KindInfo, string, boolean][] = [
    [POD, 'web.v1', true],
    [POD, 'Web', false],
    [NAMESPACE, 'team-a', true],
    [NAMESPACE, 'team.a', false],
    [SERVICE, 'web', true],
    [SERVICE, '1web', false],
    [SERVICE, 'web.v1', false],
    [NODE, 'node-1.example.com', true],
    [AUTHZ_POLICY, 'allow.all', true],
    [EVENT, 'web.17a2b3c4d5e6f7a8', true],
    [EVENT, 'Any_Name', true],
  ];
  for (const [k, name, ok] of table) {
    const errs = validateObjectMeta(k, obj(k, { name, ...(k.namespaced ? { namespace: 'default' } : {}) }));
    assert.equal(errs.length === 0, ok, `${k.kind} ${name}: ${JSON.stringify(errs)}`);
    if (!ok) assert.equal(errs[0]!.field, 'metadata.name');
  }
});

test("metadata.name: the real server's 422 text for an upper-case pod name", () => {
  const errs = validateObjectMeta(POD, obj(POD, { name: 'Web', namespace: 'default' }));
  assert.equal(
    invalidObject('Pod', '', 'Web', errs).message,
    "Pod \"Web\" is invalid: metadata.name: Invalid value: \"Web\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
  );
  assert.equal(errs[0]!.reason, 'FieldValueInvalid');
});

test('name, generateName and namespace: required, invalid, forbidden on cluster-scoped kinds', () => {
  assert.deepEqual(causes(validateObjectMeta(POD, obj(POD, { namespace: 'default' }))), [
    ['metadata.name', 'FieldValueRequired', 'Required value: name or generateName is required'],
  ]);
  assert.deepEqual(causes(validateObjectMeta(POD, obj(POD, { name: 'a' }))), [
    ['metadata.namespace', 'FieldValueRequired', 'Required value'],
  ]);
  assert.deepEqual(causes(validateObjectMeta(NODE, obj(NODE, { name: 'n', namespace: 'default' }))), [
    ['metadata.namespace', 'FieldValueForbidden', 'Forbidden: not allowed on this type'],
  ]);
  const gen = validateObjectMeta(POD, obj(POD, { name: 'web-x7k2p', generateName: 'Web-', namespace: 'default' }));
  assert.deepEqual(
    gen.map((c) => c.field),
    ['metadata.generateName'],
  );
  assert.ok(gen[0]!.message.startsWith('Invalid value: "Web-": a lowercase RFC 1123 subdomain'));
  assert.deepEqual(
    validateObjectMeta(POD, obj(POD, { name: 'web-x7k2p', generateName: 'web-', namespace: 'default' })),
    [],
  );
});

test('labels and annotations: bad keys and values are reported on the map path with the bad key or value', () => {
  const errs = validateObjectMeta(
    POD,
    obj(POD, {
      name: 'a',
      namespace: 'default',
      labels: { 'bad key': 'ok', app: 'bad value!' },
      annotations: { 'Example.COM/Fine': 'x', '-nope': 'y' },
    }),
  );
  const expected: [string, string][] = [
    ['metadata.labels', 'Invalid value: "bad key": name part must consist of alphanumeric characters'],
    [
      'metadata.labels',
      'Invalid value: "bad value!": a valid label must be an empty string or consist of alphanumeric characters',
    ],
    ['metadata.annotations', 'Invalid value: "-nope": name part must consist of alphanumeric characters'],
  ];
  assert.equal(errs.length, expected.length, JSON.stringify(errs));
  expected.forEach(([field, start], i) => {
    assert.equal(errs[i]!.field, field);
    assert.ok(errs[i]!.message.startsWith(start), errs[i]!.message);
  });
  const big = validateObjectMeta(
    POD,
    obj(POD, { name: 'a', namespace: 'default', annotations: { big: 'x'.repeat(256 * 1024) } }),
  );
  assert.deepEqual(causes(big), [
    ['metadata.annotations', 'FieldValueTooLong', 'Too long: must have at most 262144 bytes'],
  ]);
});

test('ownerReferences: empty fields, Events as owners, two controllers', () => {
  const errs = validateObjectMeta(
    POD,
    obj(POD, {
      name: 'a',
      namespace: 'default',
      ownerReferences: [
        { apiVersion: '', kind: '', name: '', uid: '' },
        { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'rs', uid: 'u1', controller: true },
        { apiVersion: 'v1', kind: 'Event', name: 'e', uid: 'u2', controller: true },
      ],
    }),
  );
  assert.deepEqual(
    errs.map((c) => [
      c.field,
      c.message.replace(/Invalid value: \[.*\]: |Invalid value: \{.*\}: /, 'Invalid value: <v>: '),
    ]),
    [
      ['metadata.ownerReferences.apiVersion', 'Invalid value: "": version must not be empty'],
      ['metadata.ownerReferences.kind', 'Invalid value: "": must not be empty'],
      ['metadata.ownerReferences.name', 'Invalid value: "": must not be empty'],
      ['metadata.ownerReferences.uid', 'Invalid value: "": must not be empty'],
      ['metadata.ownerReferences', 'Invalid value: <v>: /v1, Kind=Event is disallowed from being an owner'],
      [
        'metadata.ownerReferences',
        'Invalid value: <v>: Only one reference can have Controller set to true. Found "true" in references for ReplicaSet/rs and Event/e',
      ],
    ],
  );
});

test('finalizers: qualified names; built-in kinds take only standard unprefixed names, custom resources any', () => {
  const errs = validateObjectMeta(
    POD,
    obj(POD, { name: 'a', namespace: 'default', finalizers: ['example.com/cleanup', 'kubernetes', 'cleanup'] }),
  );
  assert.deepEqual(causes(errs), [
    [
      'metadata.finalizers[2]',
      'FieldValueInvalid',
      'Invalid value: "cleanup": name is neither a standard finalizer name nor is it fully qualified',
    ],
  ]);
  assert.deepEqual(
    validateObjectMeta(AUTHZ_POLICY, obj(AUTHZ_POLICY, { name: 'a', namespace: 'default', finalizers: ['cleanup'] })),
    [],
  );
});

test('update: name, namespace, uid, creationTimestamp are immutable; resourceVersion required; generation never decreases', () => {
  const old = obj(POD, {
    name: 'a',
    namespace: 'default',
    uid: 'u1',
    resourceVersion: '5',
    generation: 2,
    creationTimestamp: '2026-01-02T03:04:05Z',
  });
  const now = obj(POD, {
    name: 'b',
    namespace: 'other',
    uid: 'u2',
    generation: 1,
    creationTimestamp: '2026-01-02T03:04:06Z',
  });
  assert.deepEqual(causes(validateObjectMetaUpdate(POD, now, old)), [
    ['metadata.resourceVersion', 'FieldValueInvalid', 'Invalid value: "": must be specified for an update'],
    ['metadata.generation', 'FieldValueInvalid', 'Invalid value: 1: must not be decremented'],
    ['metadata.name', 'FieldValueInvalid', 'Invalid value: "b": field is immutable'],
    ['metadata.namespace', 'FieldValueInvalid', 'Invalid value: "other": field is immutable'],
    ['metadata.uid', 'FieldValueInvalid', 'Invalid value: "u2": field is immutable'],
    [
      'metadata.creationTimestamp',
      'FieldValueInvalid',
      'Invalid value: 2026-01-02 03:04:06 +0000 UTC: field is immutable',
    ],
  ]);
  assert.deepEqual(validateObjectMetaUpdate(POD, structuredClone(old), old), []);
});

test('update: no finalizer may be added once deletion started', () => {
  const old = obj(POD, {
    name: 'a',
    namespace: 'default',
    resourceVersion: '5',
    deletionTimestamp: '2026-01-02T03:04:05Z',
    finalizers: ['example.com/a'],
  });
  const now = {
    ...structuredClone(old),
    metadata: { ...structuredClone(old.metadata), finalizers: ['example.com/a', 'example.com/b'] },
  };
  assert.deepEqual(causes(validateObjectMetaUpdate(POD, now, old)), [
    [
      'metadata.finalizers',
      'FieldValueForbidden',
      'Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{"example.com/b"}',
    ],
  ]);
});

test('request namespace: fills an empty one, clears it on cluster-scoped kinds, refuses a conflict with 400', () => {
  const pod = obj(POD, { name: 'a' });
  ensureRequestNamespace(POD, pod, 'team-a');
  assert.equal(pod.metadata.namespace, 'team-a');
  const ns = obj(NAMESPACE, { name: 'x', namespace: 'team-a' });
  ensureRequestNamespace(NAMESPACE, ns, undefined);
  assert.equal(ns.metadata.namespace, undefined);
  assert.throws(
    () => ensureRequestNamespace(POD, obj(POD, { name: 'a', namespace: 'team-b' }), 'team-a'),
    (e: unknown) =>
      e instanceof ApiError &&
      e.code === 400 &&
      e.reason === 'BadRequest' &&
      e.message === 'the namespace of the provided object does not match the namespace sent on the request',
  );
});

test('immutable fields compare by value: a selector with its keys in another order is the same selector', () => {
  assert.deepEqual(
    immutable('spec.selector', { matchLabels: { a: '1', b: '2' } }, { matchLabels: { b: '2', a: '1' } }),
    [],
  );
  assert.equal(immutable('spec.selector', { matchLabels: { a: '1' } }, { matchLabels: { a: '2' } }).length, 1);
});

test('a body without metadata is reported, not a crash', () => {
  const bare = { apiVersion: 'v1', kind: 'Pod' } as unknown as KubeObject;
  assert.deepEqual(
    validateObjectMeta(POD, bare).map((c) => c.field),
    ['metadata.name', 'metadata.namespace'],
  );
  ensureRequestNamespace(POD, bare, 'default');
  assert.equal(bare.metadata.namespace, 'default');
});

test('generateName: the base cut to 58 characters and 5 characters of the suffix alphabet', () => {
  assert.match(generatedName('web-'), /^web-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
  assert.equal(generatedName('a'.repeat(80)).length, 63);
});
