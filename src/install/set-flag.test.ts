import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isMeshError } from '../lib/errors.js';
import { applySetFlags, parseSetFlag, typedSetValue } from './set-flag.js';

test('--set values are typed as istioctl parseValue types them: whole numbers, then numbers, then Go booleans, else strings', () => {
  assert.equal(typedSetValue('3'), 3);
  assert.equal(typedSetValue('1'), 1, 'Atoi comes before ParseBool: 1 is a number');
  assert.equal(typedSetValue('0.5'), 0.5);
  assert.equal(typedSetValue('1e3'), 1000);
  for (const t of ['true', 'True', 'TRUE', 't', 'T']) assert.equal(typedSetValue(t), true, t);
  for (const f of ['false', 'False', 'FALSE', 'f', 'F']) assert.equal(typedSetValue(f), false, f);
  assert.equal(typedSetValue('yes'), 'yes', 'not a Go boolean');
  assert.equal(typedSetValue('a\\,b'), 'a,b', 'an escaped comma is a comma');
  assert.equal(typedSetValue(''), '');
});

test('--set tags, the compatibility version and proxyMetadata stay strings', () => {
  assert.equal(parseSetFlag('tag=1.30').value, '1.30');
  assert.equal(parseSetFlag('values.global.tag=1.30').value, '1.30');
  assert.equal(parseSetFlag('meshConfig.defaultConfig.proxyMetadata.ISTIO_META_DNS_CAPTURE=true').value, 'true');
  assert.equal(parseSetFlag('values.pilot.replicaCount=2').value, 2);
});

test('--set paths are under spec, with escaped dots and list steps', () => {
  assert.deepEqual(parseSetFlag('profile=ambient').path, ['spec', 'profile']);
  assert.deepEqual(parseSetFlag('values.pilot.podAnnotations.a\\.b/c=x').path, [
    'spec',
    'values',
    'pilot',
    'podAnnotations',
    'a.b/c',
  ]);
  const iop: Record<string, unknown> = { spec: { components: { ingressGateways: [{ name: 'gw', enabled: true }] } } };
  applySetFlags(iop, [
    parseSetFlag('components.ingressGateways[name:gw].enabled=false'),
    parseSetFlag('values.cni.excludeNamespaces[0]=kube-system'),
    parseSetFlag('values.cni.excludeNamespaces[1]=other'),
  ]);
  assert.deepEqual(iop, {
    spec: {
      components: { ingressGateways: [{ name: 'gw', enabled: false }] },
      values: { cni: { excludeNamespaces: ['kube-system', 'other'] } },
    },
  });
});

test('a --set without path=value, or one whose list element does not exist, is INSTALL_ERR_SET naming the flag', () => {
  for (const bad of ['profile', '=ambient']) {
    assert.throws(
      () => parseSetFlag(bad),
      (e) => isMeshError(e, 'INSTALL_ERR_SET') && e.message.includes(JSON.stringify(bad)),
    );
  }
  assert.throws(
    () => applySetFlags({}, [parseSetFlag('components.ingressGateways[name:none].enabled=false')]),
    (e) => isMeshError(e, 'INSTALL_ERR_SET') && e.message.includes('element [name:none] not found'),
  );
});
