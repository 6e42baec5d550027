import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isMeshError } from '../lib/errors.js';
import { enabledComponents } from './components.js';
import { mergeIstioOperator } from './istio-operator.js';
import { parseSetFlag } from './set-flag.js';

const names = (sets: string[]): string[] =>
  enabledComponents(mergeIstioOperator([], sets.map(parseSetFlag))).map((c) => `${c.component.name}@${c.namespace}`);

test('each profile enables the components istioctl enables for it', () => {
  assert.deepEqual(names([]), ['Base@istio-system', 'Pilot@istio-system', 'IngressGateways@istio-system']);
  assert.deepEqual(names(['profile=minimal']), ['Base@istio-system', 'Pilot@istio-system']);
  assert.deepEqual(names(['profile=ambient']), [
    'Base@istio-system',
    'Pilot@istio-system',
    'Cni@istio-system',
    'Ztunnel@istio-system',
  ]);
  assert.deepEqual(names(['profile=empty']), []);
});

test('a listed component without enabled is on, and may have its own namespace', () => {
  assert.deepEqual(names(['profile=empty', 'components.cni.namespace=kube-system']), ['Cni@kube-system']);
  assert.deepEqual(names(['components.pilot.enabled=false']), ['Base@istio-system', 'IngressGateways@istio-system']);
});

test('each enabled ingress gateway is a component of its own namespace; an enabled egress gateway is refused', () => {
  assert.deepEqual(
    names([
      'profile=minimal',
      'components.ingressGateways[0].name=istio-ingressgateway',
      'components.ingressGateways[1].name=gw',
      'components.ingressGateways[1].namespace=istio-ingress',
      'components.ingressGateways[2].name=off',
      'components.ingressGateways[2].enabled=false',
    ]),
    ['Base@istio-system', 'Pilot@istio-system', 'IngressGateways@istio-system', 'IngressGateways@istio-ingress'],
  );
  assert.deepEqual(names(['components.ingressGateways[0].name=gw', 'components.ingressGateways[0].enabled=false']), [
    'Base@istio-system',
    'Pilot@istio-system',
  ]);
  assert.throws(
    () => names(['components.egressGateways[0].name=istio-egressgateway', 'components.egressGateways[0].enabled=true']),
    (e) => isMeshError(e, 'INSTALL_ERR_VALUES') && e.message.includes('istio-egressgateway'),
  );
});
