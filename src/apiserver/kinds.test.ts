import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { KindInfo } from './kind-info.js';
import { KINDS, findKind, kindOfObject, servedKinds, servedKindsRevision, setDefinedKinds } from './kinds.js';
import { customResourceSource } from './schema/custom-resource-schemas.js';

const defined = (group: string, plural: string, kind: string): KindInfo => ({
  group,
  version: 'v1',
  kind,
  plural,
  singular: kind.toLowerCase(),
  namespaced: true,
  shortNames: [],
  categories: [],
  subresources: [],
  review: false,
  strategy: undefined,
});

test("kinds of stored CRDs are served after the built-in ones, never in a built-in kind's place, until set again", () => {
  const before = servedKindsRevision();
  const widget = defined('example.com', 'widgets', 'Widget');
  setDefinedKinds([widget, defined('security.istio.io', 'authorizationpolicies', 'Impostor')]);
  try {
    assert.equal(servedKindsRevision(), before + 1);
    assert.deepEqual(servedKinds(), [...KINDS, widget]);
    assert.equal(findKind('example.com', 'v1', 'widgets'), widget);
    assert.equal(kindOfObject('example.com/v1', 'Widget'), widget);
    assert.equal(findKind('security.istio.io', 'v1', 'authorizationpolicies')?.kind, 'AuthorizationPolicy');
  } finally {
    setDefinedKinds([]);
  }
  assert.equal(findKind('example.com', 'v1', 'widgets'), undefined);
  assert.deepEqual(servedKinds(), KINDS);
});

test("each built-in custom kind is stored at its CRD's storage version and served at every version the CRD serves", () => {
  for (const k of KINDS.filter((k) => k.storageVersion === undefined)) {
    const source = customResourceSource(k.group, k.kind);
    if (source === undefined) continue;
    assert.equal(k.version, source.versions.find((v) => v.storage)?.name, `${k.kind}.${k.group}`);
    const served = KINDS.filter((o) => o.group === k.group && o.plural === k.plural).map((o) => o.version);
    assert.deepEqual(
      served.sort(),
      source.versions
        .filter((v) => v.served)
        .map((v) => v.name)
        .sort(),
      `${k.kind}.${k.group}`,
    );
  }
});

test('the other served versions are entries stored at the storage version, alike in all else', () => {
  const at = (group: string, version: string, plural: string): KindInfo | undefined => findKind(group, version, plural);
  for (const v of ['v1alpha3', 'v1beta1'])
    for (const plural of ['gateways', 'virtualservices', 'destinationrules', 'serviceentries', 'workloadentries'])
      assert.deepEqual(
        { ...at('networking.istio.io', v, plural), version: 'v1', storageVersion: undefined },
        { ...at('networking.istio.io', 'v1', plural), storageVersion: undefined },
        `${plural} ${v}`,
      );
  assert.equal(at('security.istio.io', 'v1beta1', 'authorizationpolicies')?.storageVersion, 'v1');
  assert.equal(at('security.istio.io', 'v1alpha1', 'authorizationpolicies'), undefined);
  for (const plural of ['gatewayclasses', 'gateways', 'httproutes'])
    assert.equal(at('gateway.networking.k8s.io', 'v1beta1', plural)?.storageVersion, 'v1', plural);
  // ReferenceGrant is stored at v1beta1, as upstream's CRD still has it, and served at v1 too.
  assert.equal(at('gateway.networking.k8s.io', 'v1beta1', 'referencegrants')?.storageVersion, undefined);
  assert.equal(at('gateway.networking.k8s.io', 'v1', 'referencegrants')?.storageVersion, 'v1beta1');
  for (const plural of ['grpcroutes', 'tlsroutes', 'tcproutes']) {
    assert.equal(at('gateway.networking.k8s.io', 'v1', plural)?.storageVersion, undefined, plural);
    assert.equal(at('gateway.networking.k8s.io', 'v1alpha2', plural), undefined, plural);
  }
  assert.equal(kindOfObject('networking.istio.io/v1alpha3', 'Gateway')?.storageVersion, 'v1');
});
