import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isMeshError } from '../lib/errors.js';
import { VERSION } from '../lib/version.js';
import { mergeIstioOperator, type InputFile } from './istio-operator.js';
import { parseSetFlag } from './set-flag.js';
import { at } from './value-tree.js';

const file = (text: string, name = 'iop.yaml'): InputFile => ({ name, text });
const merge = (files: InputFile[], sets: string[] = []) => mergeIstioOperator(files, sets.map(parseSetFlag));

test('with no input the default profile is installed from amesh’s own image: localhost/amesh:<version>', () => {
  const iop = merge([]);
  assert.equal(at(iop, 'spec.values.global.hub'), 'localhost');
  assert.equal(at(iop, 'spec.values.global.tag'), VERSION);
  assert.equal(at(iop, 'spec.components.pilot.enabled'), true);
  assert.equal(at(iop, 'spec.components.cni'), undefined);
  assert.equal(at(iop, 'metadata.namespace'), 'istio-system');
  assert.equal(at(iop, 'spec.values.pilot.enabled'), true, 'component enablement is told to the charts');
  assert.equal(at(iop, 'spec.values.pilot.cni.enabled'), false);
  assert.ok(Object.isFrozen(iop));
});

test('profile < files in order < --set flags in order: later inputs win', () => {
  const iop = merge(
    [
      file('spec: {profile: ambient, values: {pilot: {replicaCount: 2, env: {A: "1"}}}}', 'a.yaml'),
      file('kind: IstioOperator\nspec:\n  values:\n    pilot: {replicaCount: 3, env: {B: "2"}}', 'b.yaml'),
    ],
    ['values.pilot.replicaCount=4', 'values.pilot.replicaCount=5'],
  );
  assert.equal(at(iop, 'spec.values.pilot.replicaCount'), 5);
  assert.deepEqual(at(iop, 'spec.values.pilot.env'), { A: '1', B: '2' }, 'maps merge key by key');
  assert.equal(at(iop, 'spec.components.ztunnel.enabled'), true, 'the ambient profile enables ztunnel');
  assert.equal(at(iop, 'spec.values.pilot.cni.enabled'), true);
  assert.equal(at(iop, 'spec.values.profile'), 'ambient');
});

test('spec.hub, spec.tag and spec.meshConfig become chart values; values.global.hub set by the user wins over spec.hub', () => {
  const iop = merge([], ['hub=registry.example/istio', 'tag=1.30', 'meshConfig.trustDomain=example.org']);
  assert.equal(at(iop, 'spec.values.global.hub'), 'registry.example/istio');
  assert.equal(at(iop, 'spec.values.global.tag'), '1.30');
  assert.equal(at(iop, 'spec.values.meshConfig.trustDomain'), 'example.org');
  const both = merge([], ['hub=registry.example/istio', 'values.global.hub=mirror.example/istio']);
  assert.equal(at(both, 'spec.values.global.hub'), 'mirror.example/istio');
});

test('values.global.istioNamespace is where Istio is installed', () => {
  assert.equal(at(merge([], ['values.global.istioNamespace=mesh']), 'metadata.namespace'), 'mesh');
});

test('profiles: empty enables nothing, minimal and default are istiod and base', () => {
  const empty = merge([], ['profile=empty']);
  assert.equal(at(empty, 'spec.components.base.enabled'), false);
  assert.equal(at(empty, 'spec.components.pilot.enabled'), false);
  assert.equal(at(merge([], ['profile=minimal']), 'spec.components.pilot.enabled'), true);
});

test('an unknown profile, a file of several documents or another kind, and unparsable YAML are refused with codes', () => {
  assert.throws(
    () => merge([], ['profile=demo']),
    (e) => isMeshError(e, 'INSTALL_ERR_VALUES') && e.message.includes('profile "demo" not found'),
  );
  assert.throws(
    () => merge([file('spec: {}\n---\nspec: {}\n')]),
    (e) => isMeshError(e, 'INSTALL_ERR_FILE') && e.message.includes('only one per file'),
  );
  assert.throws(
    () => merge([file('kind: Deployment\n')]),
    (e) => isMeshError(e, 'INSTALL_ERR_FILE') && e.message.includes('not an IstioOperator'),
  );
  assert.throws(
    () => merge([file('spec: [\n')]),
    (e) => isMeshError(e, 'INSTALL_ERR_FILE') && e.message.startsWith('iop.yaml: unable to parse file'),
  );
});

test('files are YAML 1.1 as istioctl reads them, and spec: null is an empty spec', () => {
  assert.equal(
    at(merge([file('spec:\n  components:\n    cni:\n      enabled: yes\n')]), 'spec.components.cni.enabled'),
    true,
  );
  assert.equal(at(merge([file('metadata: {name: x}\nspec:\n')]), 'spec.components.pilot.enabled'), true);
});

test('spec.unvalidatedValues are laid over values without being checked', () => {
  const iop = merge([file('spec: {unvalidatedValues: {pilot: {someNewKnob: 1}}}')]);
  assert.equal(at(iop, 'spec.values.pilot.someNewKnob'), 1);
});
