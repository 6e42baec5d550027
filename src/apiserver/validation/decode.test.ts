import { test } from 'node:test';
import assert from 'node:assert/strict';
import { findKind } from '../kinds.js';
import type { KubeObject } from '../kube-object.js';
import { base64ErrorOffset, decodeError } from './decode.js';

const POD = findKind('', 'v1', 'pods')!;
const SECRET = findKind('', 'v1', 'secrets')!;
const CONFIG_MAP = findKind('', 'v1', 'configmaps')!;
const DEPLOYMENT = findKind('apps', 'v1', 'deployments')!;

function pod(metadata: Record<string, unknown>, rest: Record<string, unknown> = {}): KubeObject {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'a', ...metadata }, ...rest };
}

test("a YAML true or number as a label or annotation value does not decode: 400 with the Go decoder's path", () => {
  const table: [KubeObject, string][] = [
    [
      pod({ labels: { enabled: true } }),
      'json: cannot unmarshal bool into Go struct field ObjectMeta.metadata.labels of type string',
    ],
    [
      pod({ annotations: { replicas: 3 } }),
      'json: cannot unmarshal number into Go struct field ObjectMeta.metadata.annotations of type string',
    ],
    [
      pod({ labels: ['a'] }),
      'json: cannot unmarshal array into Go struct field ObjectMeta.metadata.labels of type map[string]string',
    ],
    [pod({ name: 7 }), 'json: cannot unmarshal number into Go struct field ObjectMeta.metadata.name of type string'],
    [
      pod({ finalizers: [1] }),
      'json: cannot unmarshal number into Go struct field ObjectMeta.metadata.finalizers of type string',
    ],
    [
      pod({ ownerReferences: [{ apiVersion: 'v1', kind: 'X', name: 'x', uid: 'u', controller: 'yes' }] }),
      'json: cannot unmarshal string into Go struct field OwnerReference.metadata.ownerReferences.controller of type bool',
    ],
    [pod({}, { spec: 'none' }), 'json: cannot unmarshal string into Go struct field Pod.spec of type v1.PodSpec'],
  ];
  for (const [obj, problem] of table) {
    const err = decodeError(POD, obj);
    assert.equal(err?.code, 400, problem);
    assert.equal(err.reason, 'BadRequest');
    assert.equal(err.message, `Pod in version "v1" cannot be handled as a Pod: ${problem}`);
  }
  assert.equal(
    decodeError(POD, pod({ labels: { app: 'web' }, annotations: { n: '3' }, finalizers: ['a/b'] }, { spec: {} })),
    undefined,
  );
  assert.equal(
    decodeError(DEPLOYMENT, {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'd', labels: { on: false } },
    } as unknown as KubeObject)?.message,
    'Deployment in version "v1" cannot be handled as a Deployment: json: cannot unmarshal bool into Go struct field ObjectMeta.metadata.labels of type string',
  );
});

test('Secret data must be standard base64 strings; ConfigMap data strings', () => {
  const secret = (data: unknown): KubeObject => ({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' }, data });
  assert.equal(decodeError(SECRET, secret({ token: 'aGVsbG8=' })), undefined);
  assert.equal(
    decodeError(SECRET, secret({ token: 'not base64!' }))?.message,
    'Secret in version "v1" cannot be handled as a Secret: illegal base64 data at input byte 3',
  );
  assert.equal(
    decodeError(SECRET, secret({ n: 1 }))?.message,
    'Secret in version "v1" cannot be handled as a Secret: json: cannot unmarshal number into Go struct field Secret.data of type []uint8',
  );
  const cm: KubeObject = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, data: { port: 8080 } };
  assert.equal(
    decodeError(CONFIG_MAP, cm)?.message,
    'ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal number into Go struct field ConfigMap.data of type string',
  );
});

test("base64: where Go's StdEncoding reports the first bad byte", () => {
  const table: [string, number | undefined][] = [
    ['', undefined],
    ['aGVsbG8=', undefined],
    ['aGVsbA==', undefined],
    ['aGVs\nbG8=', undefined],
    ['aGVsbG8', 4],
    ['aGV$', 3],
    ['a===', 1],
    ['aGVsbG8=x', 8],
  ];
  for (const [s, at] of table) assert.equal(base64ErrorOffset(s), at, JSON.stringify(s));
});
