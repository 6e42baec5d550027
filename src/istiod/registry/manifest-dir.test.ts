import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { isResource, loadManifestDir, parseManifests } from './manifest-dir.js';

test('a bad manifest is reported with file:line and the other documents and files still load', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'amesh-manifests-'));
  try {
    await writeFile(
      path.join(dir, 'a.yaml'),
      'apiVersion: v1\nkind: Pod\nmetadata: {name: ok-0, namespace: ns}\n---\napiVersion: v1\nkind: Pod\nmetadata: {namespace: ns}\n---\napiVersion: v1\nkind: Service\nmetadata: {name: svc, namespace: ns}\n',
    );
    await writeFile(path.join(dir, 'b.yaml'), 'apiVersion: v1\nkind: Pod\nmetadata: {name: [broken\n');
    await writeFile(path.join(dir, 'c.yml'), 'apiVersion: v1\nkind: Namespace\nmetadata: {name: ns}\n');
    await writeFile(path.join(dir, 'notes.txt'), 'not a manifest');
    const { objects, errors } = await loadManifestDir(dir);
    assert.deepEqual(
      objects.map((o) => `${o.kind}/${o.metadata.namespace}/${o.metadata.name}`),
      ['Pod/ns/ok-0', 'Service/ns/svc', 'Namespace//ns'],
    );
    assert.equal(objects[1]!.source, `${path.join(dir, 'a.yaml')}:9`);
    assert.equal(errors.length, 2);
    assert.ok(errors.every((e) => e.code === 'ISTIOD_ERR_MANIFEST'));
    assert.match(
      errors[0]!.message,
      new RegExp(`^${path.join(dir, 'a.yaml').replace(/[.]/g, '\\.')}:7: Pod: metadata.name: is required`),
    );
    assert.match(
      errors[1]!.message,
      new RegExp(`^${path.join(dir, 'b.yaml').replace(/[.]/g, '\\.')}:\\d+: invalid YAML`),
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('a checked document arrives typed by its kind: omitted fields absent, null ones null, spec and status empty', () => {
  const { objects, errors } = parseManifests(
    'm.yaml',
    'apiVersion: security.istio.io/v1\nkind: AuthorizationPolicy\nmetadata: {name: p, namespace: shop}\nspec: {action: DENY, selector: ~, rules: [{to: [{operation: {ports: ["80"]}}]}]}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: web-0, ownerReferences: [~, {apiVersion: apps/v1, kind: ReplicaSet, name: web-1}]}\n',
  );
  assert.deepEqual(errors, []);
  const [ap, pod] = objects;
  assert.ok(ap !== undefined && isResource(ap) && ap.kind === 'AuthorizationPolicy');
  assert.equal(ap.spec.action, 'DENY');
  assert.equal(ap.spec.selector, null, 'null is kept: it is not the same as absent for every field the model reads');
  assert.equal('targetRef' in ap.spec, false);
  assert.deepEqual(ap.spec.rules?.[0]?.to?.[0]?.operation?.ports, ['80']);
  assert.deepEqual(ap.status, {});
  assert.ok(pod !== undefined && isResource(pod) && pod.kind === 'Pod');
  assert.deepEqual(pod.spec, {});
  assert.deepEqual(pod.metadata, {
    name: 'web-0',
    namespace: 'default',
    ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-1' }],
    labels: {},
    annotations: {},
  });
});

test('an object of a kind amesh does not read is kept for the API server, but is no Resource', () => {
  const { objects } = parseManifests(
    'm.yaml',
    'apiVersion: v1\nkind: Secret\nmetadata: {name: c, namespace: shop}\ndata: {a: Yg==}\n',
  );
  const [config] = objects;
  assert.ok(config !== undefined);
  assert.equal(config.kind, 'Secret');
  assert.equal(isResource(config), false);
});
