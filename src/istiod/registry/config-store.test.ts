import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { ConfigStore } from './config-store.js';
import { parseManifests, type ObjectChanges, type RejectedObject } from './manifest-dir.js';

const KEY = 'AuthorizationPolicy/shop/allow-web';
const REFUSED: RejectedObject = {
  key: KEY,
  kind: 'AuthorizationPolicy',
  namespace: 'shop',
  name: 'allow-web',
  source: 'shop/allow-web',
};
const [ALLOW] = parseManifests(
  'm.yaml',
  'apiVersion: security.istio.io/v1\nkind: AuthorizationPolicy\nmetadata: {name: allow-web, namespace: shop}\nspec: {action: ALLOW, rules: [{}]}\n',
).objects;

/** What `act` makes the store emit, flushed at once; undefined when it emits nothing. */
function changesOf(store: ConfigStore, act: () => void): ObjectChanges | undefined {
  let seen: ObjectChanges | undefined;
  const on = (c: ObjectChanges): void => {
    seen = c;
  };
  store.on('change', on);
  act();
  store.flush();
  store.off('change', on);
  return seen;
}

test('a policy refused with no good version stands in as deny-all until its source delivers a good one', () => {
  const store = new ConfigStore(pino({ level: 'silent' }));
  assert.deepEqual(changesOf(store, () => store.refuse(REFUSED))?.get(KEY)?.spec, { action: 'DENY', rules: [{}] });
  assert.equal(changesOf(store, () => store.upsert(ALLOW!))?.get(KEY), ALLOW);
  assert.equal(
    changesOf(store, () => store.dropStandIn(KEY)),
    undefined,
    'the object its source delivered is no stand-in to drop',
  );
});

test('a refused new version of an object the store holds keeps the last good version', () => {
  const store = new ConfigStore(pino({ level: 'silent' }));
  store.upsert(ALLOW!);
  store.flush();
  assert.equal(
    changesOf(store, () => store.refuse(REFUSED)),
    undefined,
  );
});

test('a stand-in goes when its source no longer names the policy', () => {
  const store = new ConfigStore(pino({ level: 'silent' }));
  store.refuse({ ...REFUSED, kind: 'PeerAuthentication', key: 'PeerAuthentication/shop/allow-web' });
  store.flush();
  const dropped = changesOf(store, () => store.dropStandIn('PeerAuthentication/shop/allow-web'));
  assert.deepEqual([...(dropped ?? new Map()).entries()], [['PeerAuthentication/shop/allow-web', undefined]]);
});
