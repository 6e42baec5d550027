import { test } from 'node:test';
import assert from 'node:assert/strict';
import { customResourceSchema } from './custom-resource-schemas.js';
import type { JsonSchema } from './json-schema.js';
import { applyDefaults, pruneUnknownFields, validateAgainstSchema } from './schema-validator.js';

const AP = customResourceSchema('security.istio.io/v1', 'AuthorizationPolicy')!;

function policy(spec: unknown): Record<string, unknown> {
  return { apiVersion: 'security.istio.io/v1', kind: 'AuthorizationPolicy', metadata: { name: 'p' }, spec };
}

function errors(schema: JsonSchema, obj: Record<string, unknown>): string[] {
  return validateAgainstSchema(obj, schema).map((c) => `${c.reason} ${c.field ?? ''}: ${c.message}`);
}

test('an enum value outside the schema is FieldValueNotSupported listing the supported values', () => {
  assert.deepEqual(errors(AP, policy({ action: 'DENYX' })), [
    'FieldValueNotSupported spec.action: Unsupported value: "DENYX": supported values: "ALLOW", "DENY", "AUDIT", "CUSTOM"',
  ]);
});

test('a value of the wrong type is FieldValueTypeInvalid naming both types, and nothing below it is checked', () => {
  assert.deepEqual(errors(AP, policy({ rules: 'x' })), [
    'FieldValueTypeInvalid spec.rules: Invalid value: "string": spec.rules in body must be of type array: "string"',
  ]);
  assert.deepEqual(errors(AP, policy('ALLOW')), [
    'FieldValueTypeInvalid spec: Invalid value: "string": spec in body must be of type object: "string"',
  ]);
  assert.deepEqual(errors(AP, policy({ rules: [{ to: [{ operation: { ports: [80] } }] }] })), [
    'FieldValueTypeInvalid spec.rules[0].to[0].operation.ports[0]: Invalid value: "integer": spec.rules[0].to[0].operation.ports[0] in body must be of type string: "integer"',
  ]);
});

test('a required field missing is FieldValueRequired at its path', () => {
  assert.deepEqual(errors(AP, policy({ rules: [{ when: [{ values: ['a'] }] }] })), [
    'FieldValueRequired spec.rules[0].when[0].key: Required value',
  ]);
  const se = customResourceSchema('networking.istio.io/v1', 'ServiceEntry')!;
  assert.deepEqual(errors(se, { metadata: {} }), ['FieldValueRequired spec: Required value']);
});

test('list, string and map limits: Too many, Too long, at least N chars, maximum, pattern', () => {
  const rules = Array.from({ length: 513 }, () => ({}));
  assert.deepEqual(errors(AP, policy({ rules })), [
    'FieldValueTooMany spec.rules: Too many: 513: must have at most 512 items',
  ]);
  assert.deepEqual(errors(AP, policy({ selector: { matchLabels: { app: 'x'.repeat(64) } } })), [
    'FieldValueTooLong spec.selector.matchLabels.app: Too long: must have at most 63 bytes',
  ]);
  assert.deepEqual(errors(AP, policy({ targetRefs: [{ kind: 'Gateway', name: '' }] })), [
    'FieldValueInvalid spec.targetRefs[0].name: Invalid value: "": spec.targetRefs[0].name in body should be at least 1 chars long',
  ]);
  assert.deepEqual(errors(AP, policy({ targetRefs: [{ kind: '9x', name: 'gw' }] })), [
    'FieldValueInvalid spec.targetRefs[0].kind: Invalid value: "9x": spec.targetRefs[0].kind in body should match \'^[a-zA-Z]([-a-zA-Z0-9]*[a-zA-Z0-9])?$\'',
  ]);
  const gw = customResourceSchema('gateway.networking.k8s.io/v1', 'Gateway')!;
  const listener = { name: 'http', port: 70000, protocol: 'HTTP' };
  assert.deepEqual(errors(gw, { spec: { gatewayClassName: 'istio', listeners: [listener] } }), [
    'FieldValueInvalid spec.listeners[0].port: Invalid value: 70000: spec.listeners[0].port in body should be less than or equal to 65535',
  ]);
});

test('two members of a proto oneof set fail the oneOf at <nil>, as kube-openapi reports it', () => {
  assert.deepEqual(errors(AP, policy({ action: 'CUSTOM', provider: { name: 'ext' } })), []);
  const vs = customResourceSchema('networking.istio.io/v1', 'VirtualService')!;
  const match = { uri: { exact: '/a', prefix: '/b' } };
  assert.deepEqual(errors(vs, { spec: { http: [{ match: [match] }] } }), [
    'FieldValueInvalid <nil>: Invalid value: "": "spec.http[0].match[0].uri" must validate one and only one schema (oneOf). Found 2 valid alternatives',
  ]);
});

test('int-or-string and nullable fields take what their schema allows', () => {
  const dr = customResourceSchema('networking.istio.io/v1', 'DestinationRule')!;
  const lb = (v: unknown): Record<string, unknown> => ({
    spec: { host: 'a', trafficPolicy: { connectionPool: { tcp: { maxConnections: v } } } },
  });
  assert.deepEqual(errors(dr, lb(10)), []);
  assert.equal(errors(dr, lb('ten')).length, 1);
  const pa = customResourceSchema('security.istio.io/v1', 'PeerAuthentication')!;
  assert.deepEqual(errors(pa, { status: { observedGeneration: '3' }, spec: {} }), []);
});

test('pruning drops unknown fields below spec and metadata and reports their paths; preserve-unknown-fields keeps them', () => {
  const obj = policy({ action: 'ALLOW', foo: 1, rules: [{ from: [{ source: { principals: ['a'], bar: true } }] }] });
  (obj.metadata as Record<string, unknown>).extra = 'x';
  obj.other = {};
  assert.deepEqual(pruneUnknownFields(obj, AP), [
    'metadata.extra',
    'other',
    'spec.foo',
    'spec.rules[0].from[0].source.bar',
  ]);
  assert.deepEqual(obj, policy({ action: 'ALLOW', rules: [{ from: [{ source: { principals: ['a'] } }] }] }));
  const kept = { ...policy({}), status: { anything: { goes: 1 } } };
  assert.deepEqual(pruneUnknownFields(kept, AP), []);
  assert.deepEqual(kept.status, { anything: { goes: 1 } });
});

test('pruning drops a null where the schema is not nullable, silently', () => {
  const obj = policy({ action: null, selector: { matchLabels: null } });
  assert.deepEqual(pruneUnknownFields(obj, AP), []);
  assert.deepEqual(obj.spec, { selector: {} });
});

test('defaults fill absent fields below present ones, as structural defaulting does', () => {
  const route = customResourceSchema('gateway.networking.k8s.io/v1', 'HTTPRoute')!;
  const obj: Record<string, unknown> = {
    spec: { parentRefs: [{ name: 'gw' }], rules: [{ backendRefs: [{ name: 's', port: 80 }] }] },
  };
  applyDefaults(obj, route);
  assert.deepEqual(obj.spec, {
    parentRefs: [{ name: 'gw', group: 'gateway.networking.k8s.io', kind: 'Gateway' }],
    rules: [
      {
        backendRefs: [{ name: 's', port: 80, group: '', kind: 'Service', weight: 1 }],
        matches: [{ path: { type: 'PathPrefix', value: '/' } }],
      },
    ],
  });
});
