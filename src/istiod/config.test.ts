import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { istiodServingNames, loadIstiodConfig } from './config.js';

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

test("ServiceEntry address allocation: on by default with Istio's prefixes; PILOT_ENABLE_IP_AUTOALLOCATE=false turns it off and its prefixes go unread", () => {
  const load = (env: Record<string, string>): ReturnType<typeof loadIstiodConfig>['ipAutoallocate'] =>
    loadIstiodConfig({ configDir: 'examples/local-mesh' }, env).ipAutoallocate;
  assert.deepEqual([load({})?.ipv4.text, load({})?.ipv6.text], ['240.240.0.0/16', '2001:2::/48']);
  assert.equal(
    load({ PILOT_IP_AUTOALLOCATE_IPV4_PREFIX: '240.240.2.0/24', PILOT_IP_AUTOALLOCATE_IPV6_PREFIX: '2001:2:0:2::/64' })
      ?.ipv6.text,
    '2001:2:0:2::/64',
  );
  assert.equal(load({ PILOT_ENABLE_IP_AUTOALLOCATE: 'false', PILOT_IP_AUTOALLOCATE_IPV4_PREFIX: 'bad' }), undefined);
  assert.throws(() => load({ PILOT_ENABLE_IP_AUTOALLOCATE: 'maybe' }), {
    code: 'AMESH_ERR_CONFIG',
    message: /PILOT_ENABLE_IP_AUTOALLOCATE: "maybe" is not a boolean/,
  });
  assert.throws(() => load({ PILOT_IP_AUTOALLOCATE_IPV4_PREFIX: '2001:2::/48' }), {
    code: 'AMESH_ERR_CONFIG',
    message: /PILOT_IP_AUTOALLOCATE_IPV4_PREFIX: "2001:2::\/48" is not an IPv4 prefix/,
  });
});

test("the CA's settings: ROOT_CA_DIR (./etc/cacerts) unless --ca-dir, which must then hold a CA; POD_NAMESPACE; CITADEL_SELF_SIGNED_CA_CERT_TTL", () => {
  const load = (env: Record<string, string>, caDir?: string): ReturnType<typeof loadIstiodConfig> =>
    loadIstiodConfig({ configDir: 'examples/local-mesh', caDir }, env);
  const defaults = load({});
  assert.deepEqual(defaults.pluggedCa, { dir: path.resolve('etc/cacerts'), required: false });
  assert.equal(defaults.podNamespace, 'istio-system');
  assert.equal(defaults.selfSignedCa.rootTtlMs, 3650 * 24 * 3600_000);
  assert.deepEqual(load({ ROOT_CA_DIR: '/etc/cacerts' }).pluggedCa, { dir: '/etc/cacerts', required: false });
  assert.deepEqual(load({ ROOT_CA_DIR: '/etc/cacerts' }, '/srv/ca').pluggedCa, { dir: '/srv/ca', required: true });
  assert.equal(load({ POD_NAMESPACE: 'mesh' }).podNamespace, 'mesh');
  assert.equal(load({ CITADEL_SELF_SIGNED_CA_CERT_TTL: '48h' }).selfSignedCa.rootTtlMs, 48 * 3600_000);
  assert.throws(() => load({ CITADEL_SELF_SIGNED_CA_CERT_TTL: '0s' }), {
    code: 'AMESH_ERR_CONFIG',
    message: /CITADEL_SELF_SIGNED_CA_CERT_TTL: "0s" must be longer than 0/,
  });
});

test("istiod's serving certificate names its Service in its own namespace, and the revision's Service for a revision", () => {
  assert.deepEqual(istiodServingNames({ podNamespace: 'mesh', revision: 'default' }), [
    'istiod.mesh.svc',
    'istiod.mesh.svc.cluster.local',
    'istiod',
    'localhost',
  ]);
  assert.ok(
    istiodServingNames({ podNamespace: 'istio-system', revision: 'canary' }).includes('istiod-canary.istio-system.svc'),
  );
});
