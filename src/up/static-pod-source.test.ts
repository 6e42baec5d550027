import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CONFIG_HASH_ANNOTATION, readStaticPods, staticPod } from './static-pod-source.js';

const manifest = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'kube-apiserver', namespace: 'kube-system' },
  spec: { hostNetwork: true, containers: [{ name: 'kube-apiserver', command: ['amesh', 'apiserver'] }] },
};

test('a static pod is named <name>-<node>, bound to its node, tolerates NoExecute, and its uid hashes manifest, node and file', () => {
  const p = staticPod(manifest, '/m/kube-apiserver.yaml', 'Node1');
  assert.equal(p.metadata?.name, 'kube-apiserver-node1');
  assert.equal(p.spec?.nodeName, 'Node1');
  assert.deepEqual(p.spec?.tolerations, [{ operator: 'Exists', effect: 'NoExecute' }]);
  assert.match(p.metadata?.uid ?? '', /^[0-9a-f]{32}$/);
  assert.equal(p.metadata?.annotations?.[CONFIG_HASH_ANNOTATION], p.metadata?.uid);
  assert.equal(p.metadata?.annotations?.['kubernetes.io/config.source'], 'file');
  assert.equal(staticPod(manifest, '/m/kube-apiserver.yaml', 'Node1').metadata?.uid, p.metadata?.uid, 'stable');
  assert.notEqual(staticPod(manifest, '/m/kube-apiserver.yaml', 'node2').metadata?.uid, p.metadata?.uid);
  const changed = { ...manifest, spec: { ...manifest.spec, hostNetwork: false } };
  assert.notEqual(staticPod(changed, '/m/kube-apiserver.yaml', 'Node1').metadata?.uid, p.metadata?.uid);
  assert.equal(manifest.metadata.name, 'kube-apiserver', 'the manifest itself is left as read');
  const noNamespace = { ...manifest, metadata: { name: 'x' } };
  assert.equal(staticPod(noNamespace, '/m/x.yaml', 'n').metadata?.namespace, 'default');
});

test('a manifest directory: every .yaml, .yml and .json file is a pod; one that is not a Pod is skipped, saying why', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'amesh-static-pods-'));
  try {
    await writeFile(path.join(dir, 'a.yaml'), JSON.stringify(manifest));
    await writeFile(path.join(dir, 'b.json'), JSON.stringify({ ...manifest, metadata: { name: 'b' } }));
    await writeFile(path.join(dir, 'c.yml'), 'apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n');
    await writeFile(path.join(dir, 'd.yaml'), 'kind: Pod\n---\nkind: Pod\n');
    await writeFile(
      path.join(dir, 'e.yaml'),
      'apiVersion: v1\nkind: Pod\nmetadata: {name: e}\nspec: {containers: []}\n',
    );
    await writeFile(path.join(dir, 'notes.txt'), 'not a manifest');
    await writeFile(path.join(dir, '.hidden.yaml'), JSON.stringify(manifest));
    const { pods, errors } = await readStaticPods(dir, 'node1');
    assert.deepEqual(
      pods.map((p) => p.metadata?.name),
      ['kube-apiserver-node1', 'b-node1'],
    );
    assert.deepEqual(errors, [
      `${path.join(dir, 'c.yml')}: holds apps/v1/Deployment, not a v1 Pod`,
      `${path.join(dir, 'd.yaml')}: holds 2 documents, not one Pod`,
      `${path.join(dir, 'e.yaml')}: the Pod has no containers`,
    ]);
    assert.deepEqual(await readStaticPods(path.join(dir, 'missing'), 'node1'), { pods: [], errors: [] });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
