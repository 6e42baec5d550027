import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { KindInfo } from './kind-info.js';
import { KINDS, findKind, kindOfObject, servedKinds, servedKindsRevision, setDefinedKinds } from './kinds.js';

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
