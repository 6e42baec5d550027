import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { ConfigStore } from './config-store.js';
import { checkApiObject, WATCHED_KINDS } from './kube-source.js';
import { isResource, parseManifests } from './manifest-dir.js';

const watched = (kind: string): (typeof WATCHED_KINDS)[number] => WATCHED_KINDS.find((w) => w.kind === kind)!;

test('an API list item (no kind, no apiVersion) reaches the store as the typed Resource its manifest gives', () => {
  const item = {
    metadata: { name: 'web-0', namespace: 'shop', uid: 'u1', labels: { app: 'web' } },
    spec: { nodeName: 'n1', serviceAccountName: 'web', containers: [{ name: 'c' }] },
    status: { phase: 'Running', podIP: '10.1.0.5' },
  };
  const r = checkApiObject(watched('Pod'), item);
  assert.deepEqual(r.errors, []);
  const pod = r.manifest;
  assert.ok(pod !== undefined && isResource(pod) && pod.kind === 'Pod');
  assert.equal(pod.spec.nodeName, 'n1');
  assert.equal(pod.status.podIP, '10.1.0.5');
  // JSON is YAML: the same object, written as a manifest.
  const [manifest] = parseManifests('m.yaml', JSON.stringify({ apiVersion: 'v1', kind: 'Pod', ...item })).objects;
  assert.deepEqual([pod.metadata, pod.spec, pod.status], [manifest?.metadata, manifest?.spec, manifest?.status]);
});

test('an AuthorizationPolicy from the API that fails its schema is refused, and stands in as deny-all', () => {
  const item = { metadata: { name: 'allow-web', namespace: 'shop' }, spec: { action: 'ALLOW', rules: 'everything' } };
  const r = checkApiObject(watched('AuthorizationPolicy'), item);
  assert.equal(r.manifest, undefined);
  assert.match(r.errors[0] ?? '', /spec\.rules: expected a list/);
  assert.ok(r.rejected !== undefined);
  const store = new ConfigStore(pino({ level: 'silent' }));
  let spec: unknown;
  store.on('change', (c) => (spec = c.get(r.rejected!.key)?.spec));
  store.refuse(r.rejected);
  store.flush();
  assert.deepEqual(spec, { action: 'DENY', rules: [{}] });
});
