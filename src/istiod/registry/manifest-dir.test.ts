import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadManifestDir } from './manifest-dir.js';

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
