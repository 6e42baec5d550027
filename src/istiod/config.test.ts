import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadIstiodConfig } from './config.js';

test('--kubeconfig and --config-dir together are a config error', () => {
  assert.throws(
    () => loadIstiodConfig({ configDir: 'examples/local-mesh', kubeconfig: '/nonexistent/kubeconfig' }, {}),
    { code: 'AMESH_ERR_CONFIG', message: /--kubeconfig and --config-dir/ },
  );
});

test('without --config-dir, istiod needs a Kubernetes API and says where it looked', () => {
  assert.throws(() => loadIstiodConfig({}, {}), {
    code: 'AMESH_ERR_CONFIG',
    message: /no --kubeconfig, no KUBECONFIG and not running in a pod/,
  });
  assert.equal(
    loadIstiodConfig({ configDir: 'examples/local-mesh' }, { KUBECONFIG: '/nonexistent' }).kube,
    undefined,
    'a manifest directory reads no kubeconfig',
  );
});
