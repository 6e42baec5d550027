import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isMeshError } from '../../lib/errors.js';
import { PLUGIN_CA_FILES, type PluginCaLayout } from '../../lib/pki/plugin-ca-dir.js';
import { signingCaSource } from './signing-ca-source.js';

const ALL = Object.values(PLUGIN_CA_FILES);
const layout = (present: readonly string[]): PluginCaLayout => ({
  form: 'istio',
  names: PLUGIN_CA_FILES,
  present,
  missing: ALL.filter((f) => !present.includes(f)),
});
const source = (present: readonly string[], o: { required?: boolean; kube?: boolean } = {}): string =>
  signingCaSource(layout(present), { dir: '/etc/cacerts', required: o.required ?? false, kube: o.kube ?? false });

test('a complete plug-in CA directory wins, with or without Kubernetes', () => {
  assert.equal(source(ALL, { kube: true }), 'plugged');
  assert.equal(source(ALL), 'plugged');
});

test('without plug-in CA files: istio-ca-secret on Kubernetes, the state directory without', () => {
  assert.equal(source([], { kube: true }), 'secret');
  assert.equal(source([]), 'state-dir');
});

test('some plug-in CA files without the others stop istiod, naming what is there and what lacks', () => {
  assert.throws(
    () => source(['root-cert.pem'], { kube: true }),
    (e: unknown) =>
      isMeshError(e, 'ZT_ERR_CA_FILES') &&
      /^\/etc\/cacerts: incomplete plug-in CA: it has root-cert\.pem but lacks ca-cert\.pem, ca-key\.pem, cert-chain\.pem;/.test(
        e.message,
      ),
  );
});

test('an explicit --ca-dir with no CA in it is an error, not a fallback', () => {
  assert.throws(
    () => source([], { required: true, kube: true }),
    (e: unknown) => isMeshError(e, 'ZT_ERR_CA_FILES') && /it lacks ca-cert\.pem/.test(e.message),
  );
});
