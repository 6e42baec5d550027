import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeObject } from '../kube-object.js';
import { configMapStrategy } from './config-map.js';
import { secretStrategy } from './secret.js';

function cm(fields: Record<string, unknown>): KubeObject {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'default' }, ...fields };
}

function secret(fields: Record<string, unknown>): KubeObject {
  return { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's', namespace: 'default' }, ...fields };
}

function fieldsAndMessages(list: { field?: string; message: string }[]): [string | undefined, string][] {
  return list.map((c) => [c.field, c.message]);
}

test('ConfigMap keys: config keys, in data or binaryData but not both, 1 MiB in all', () => {
  assert.deepEqual(configMapStrategy.validate!(cm({ data: { 'app.yaml': 'x', KEY_1: 'y' } })), []);
  const errs = fieldsAndMessages(
    configMapStrategy.validate!(cm({ data: { 'a b': 'x', dup: 'y' }, binaryData: { dup: 'eQ==' } })),
  );
  assert.deepEqual(errs, [
    [
      'data[a b]',
      "Invalid value: \"a b\": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')",
    ],
    ['data[dup]', 'Invalid value: "dup": duplicate of key present in binaryData'],
    ['binaryData[dup]', 'Invalid value: "dup": duplicate of key present in data'],
  ]);
  assert.deepEqual(fieldsAndMessages(configMapStrategy.validate!(cm({ data: { big: 'x'.repeat(1024 * 1024 + 1) } }))), [
    ['', 'Too long: must have at most 1048576 bytes'],
  ]);
});

test('immutable ConfigMaps and Secrets keep their data and the flag', () => {
  const old = cm({ data: { a: '1' }, immutable: true });
  assert.deepEqual(fieldsAndMessages(configMapStrategy.validateUpdate!(cm({ data: { a: '2' } }), old)), [
    ['immutable', 'Forbidden: field is immutable when `immutable` is set'],
    ['data', 'Forbidden: field is immutable when `immutable` is set'],
  ]);
  assert.deepEqual(
    configMapStrategy.validateUpdate!(
      cm({ data: { a: '1' }, immutable: true, metadata: { name: 'c', labels: { x: 'y' } } }),
      old,
    ),
    [],
  );
});

test('Secret: stringData is written into data as base64 and not stored; type defaults to Opaque and is immutable', () => {
  const s = secret({ data: { a: 'YQ==' }, stringData: { b: 'héllo' } });
  secretStrategy.prepareForCreate!(s);
  assert.deepEqual(
    [s.data, s.stringData, s.type],
    [{ a: 'YQ==', b: Buffer.from('héllo').toString('base64') }, undefined, 'Opaque'],
  );
  assert.deepEqual(
    fieldsAndMessages(
      secretStrategy.validateUpdate!(secret({ data: {}, type: 'kubernetes.io/tls', metadata: { name: 's' } }), s),
    ),
    [
      ['type', 'Invalid value: "kubernetes.io/tls": field is immutable'],
      ['data[tls.crt]', 'Required value'],
      ['data[tls.key]', 'Required value'],
    ],
  );
  assert.deepEqual(
    fieldsAndMessages(secretStrategy.validate!(secret({ type: 'kubernetes.io/service-account-token' }))),
    [['metadata.annotations[kubernetes.io/service-account.name]', 'Required value']],
  );
  assert.match(
    fieldsAndMessages(secretStrategy.validate!(secret({ data: { '..x': 'YQ==' } })))[0]![1],
    /must not start with '\.\.'$/,
  );
});
