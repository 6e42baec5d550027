import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError } from './api-error.js';
import type { KindInfo } from './kind-info.js';
import { findKind } from './kinds.js';
import { inServedVersion, storageKindOf, toStoredVersion } from './version-conversion.js';

const at = (version: string): KindInfo => findKind('networking.istio.io', version, 'gateways') as KindInfo;
const gateway = (apiVersion: string, name = 'gw'): Record<string, unknown> => ({
  apiVersion,
  kind: 'Gateway',
  metadata: { name, namespace: 'ns' },
  spec: { selector: { istio: 'ingressgateway' } },
});

test('another served version reads and writes the stored kind; the stored one is its own', () => {
  assert.equal(storageKindOf(at('v1alpha3')), at('v1'));
  assert.equal(storageKindOf(at('v1beta1')), at('v1'));
  assert.equal(storageKindOf(at('v1')), at('v1'));
  const grants = findKind('gateway.networking.k8s.io', 'v1', 'referencegrants') as KindInfo;
  assert.equal(storageKindOf(grants).version, 'v1beta1');
});

test("answers carry the request's apiVersion: objects, lists and their items; Status and other kinds pass", () => {
  const v1alpha3 = at('v1alpha3');
  assert.deepEqual(
    inServedVersion(v1alpha3, gateway('networking.istio.io/v1')),
    gateway('networking.istio.io/v1alpha3'),
  );
  const list = {
    apiVersion: 'networking.istio.io/v1',
    kind: 'GatewayList',
    metadata: { resourceVersion: '7' },
    items: [gateway('networking.istio.io/v1', 'a'), gateway('networking.istio.io/v1', 'b')],
  };
  assert.deepEqual(inServedVersion(v1alpha3, list), {
    apiVersion: 'networking.istio.io/v1alpha3',
    kind: 'GatewayList',
    metadata: { resourceVersion: '7' },
    items: [gateway('networking.istio.io/v1alpha3', 'a'), gateway('networking.istio.io/v1alpha3', 'b')],
  });
  const status = { apiVersion: 'v1', kind: 'Status', status: 'Success' };
  assert.equal(inServedVersion(v1alpha3, status), status);
  const stored = gateway('networking.istio.io/v1');
  assert.equal(inServedVersion(at('v1'), stored), stored);
});

test('bodies are stored at the storage version; a body naming another version is refused as upstream words it', () => {
  assert.deepEqual(
    toStoredVersion(at('v1beta1'), gateway('networking.istio.io/v1beta1')),
    gateway('networking.istio.io/v1'),
  );
  // Without apiVersion (a merge patch of spec alone), and JSON patches, pass as they are.
  const patch = { spec: { servers: [] } };
  assert.equal(toStoredVersion(at('v1beta1'), patch), patch);
  const jsonPatch = [{ op: 'replace', path: '/spec/selector', value: {} }];
  assert.equal(toStoredVersion(at('v1beta1'), jsonPatch), jsonPatch);
  assert.throws(
    () => toStoredVersion(at('v1alpha3'), gateway('networking.istio.io/v1beta1')),
    (e: unknown) =>
      e instanceof ApiError &&
      e.reason === 'BadRequest' &&
      e.message ===
        'the API version in the data (networking.istio.io/v1beta1) does not match the expected API version (networking.istio.io/v1alpha3)',
  );
  // The stored version itself is left to the store's own check.
  const other = gateway('networking.istio.io/v1alpha3');
  assert.equal(toStoredVersion(at('v1'), other), other);
});
