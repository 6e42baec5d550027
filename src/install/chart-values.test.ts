import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isMeshError } from '../lib/errors.js';
import { chartValues } from './chart-values.js';
import { enabledComponents } from './components.js';
import { mergeIstioOperator, type InputFile } from './istio-operator.js';
import { parseSetFlag } from './set-flag.js';
import { at } from './value-tree.js';

function values(chart: string, sets: string[], files: InputFile[] = []) {
  const iop = mergeIstioOperator(files, sets.map(parseSetFlag));
  const c = enabledComponents(iop).find((s) => s.component.chart === chart);
  assert.ok(c, `${chart} is enabled`);
  return chartValues(c, iop);
}

test("the ambient profile's chart profile turns on PILOT_ENABLE_AMBIENT for istiod and ambient for the node agent", () => {
  assert.equal(at(values('istiod', ['profile=ambient']), 'env.PILOT_ENABLE_AMBIENT'), 'true');
  assert.equal(at(values('istiod', []), 'env.PILOT_ENABLE_AMBIENT'), undefined);
  assert.equal(at(values('cni', ['profile=ambient']), 'ambient.enabled'), true);
});

test('values.pilot.* and values.cni.* reach their charts unprefixed, over the chart defaults', () => {
  const istiod = values('istiod', ['values.pilot.replicaCount=3', 'values.pilot.env.A=b']);
  assert.equal(at(istiod, 'replicaCount'), 3);
  assert.equal(at(istiod, 'env.A'), 'b');
  assert.equal(at(istiod, 'autoscaleMax'), 5, 'defaults stay');
  const cni = values('cni', ['profile=ambient', 'values.cni.cniBinDir=/bin', 'values.cni.ambient.dnsCapture=false']);
  assert.equal(at(cni, 'cniBinDir'), '/bin');
  assert.equal(at(cni, 'ambient.dnsCapture'), false, 'false overrides a true default');
  assert.equal(at(cni, 'ambient.enabled'), true);
});

test('the ztunnel chart takes values.ztunnel flattened, with global values at its top level', () => {
  const z = values('ztunnel', [
    'profile=ambient',
    'values.global.hub=registry.example',
    'values.ztunnel.logLevel=debug',
  ]);
  assert.equal(at(z, 'hub'), 'registry.example');
  assert.equal(at(z, 'logLevel'), 'debug');
  assert.equal(at(z, 'meshConfig.defaultConfig.proxyMetadata.ISTIO_META_ENABLE_HBONE'), 'true');
  assert.equal(at(values('ztunnel', ['profile=ambient', 'values.ztunnel.hub=z.example']), 'hub'), 'z.example');
});

test("a component's hub and tag, and its k8s replica and HPA settings, become its chart values", () => {
  const istiod = values('istiod', [
    'components.pilot.hub=pilot.example',
    'components.pilot.tag=9',
    'components.pilot.k8s.hpaSpec.minReplicas=2',
    'components.pilot.k8s.replicaCount=4',
  ]);
  assert.equal(at(istiod, 'hub'), 'pilot.example');
  assert.equal(at(istiod, 'tag'), '9');
  assert.equal(at(istiod, 'autoscaleMin'), 2);
  assert.equal(at(istiod, 'replicaCount'), 4);
});

test('platforms move the node agent’s host paths; an unknown platform or compatibility version is refused', () => {
  assert.equal(
    at(values('cni', ['profile=ambient', 'values.global.platform=k3s']), 'cniConfDir'),
    '/var/lib/rancher/k3s/agent/etc/cni/net.d',
  );
  assert.throws(
    () => values('cni', ['profile=ambient', 'values.global.platform=gke']),
    (e) => isMeshError(e, 'INSTALL_ERR_VALUES') && e.message.startsWith('unknown platform gke'),
  );
  assert.throws(
    () => values('istiod', ['compatibilityVersion=1.25']),
    (e) => isMeshError(e, 'INSTALL_ERR_VALUES') && e.message.startsWith('unknown compatibility version 1.25'),
  );
});
