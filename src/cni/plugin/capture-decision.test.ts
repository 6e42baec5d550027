import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decideBeforeLookup, decideForPod, type PodFacts } from './capture-decision.js';
import { compileEnablementSelectors } from './enablement-selectors.js';
import { ISTIO_DEFAULT_SELECTORS } from '../../../test/helpers/cni-network-config.js';

const cfg = {
  podNamespace: 'istio-system',
  excludeNamespaces: ['kube-system'],
  ambientEnabled: true,
  enablementSelectors: compileEnablementSelectors(ISTIO_DEFAULT_SELECTORS, 'enablement_selectors'),
};
const args = (podNamespace: string, podName: string) => ({ podNamespace, podName });
const pod = (p: Partial<PodFacts>): PodFacts => ({
  labels: {},
  annotations: {},
  hostNetwork: false,
  namespaceLabels: {},
  ...p,
});
const AMBIENT = { 'istio.io/dataplane-mode': 'ambient' };

test('decided from the CNI arguments alone: the node agent pod, a sandbox that is no pod, an excluded namespace, ambient off', () => {
  assert.deepEqual(decideBeforeLookup(cfg, args('istio-system', 'istio-cni-node-x7k2p')), {
    capture: false,
    reason: 'node agent pod',
  });
  assert.equal(
    decideBeforeLookup(cfg, args('default', 'istio-cni-node-x7k2p')),
    undefined,
    'the prefix counts only in the agent namespace',
  );
  assert.deepEqual(decideBeforeLookup(cfg, args('', '')), { capture: false, reason: 'not a Kubernetes pod' });
  assert.deepEqual(decideBeforeLookup(cfg, args('default', '')), { capture: false, reason: 'not a Kubernetes pod' });
  assert.deepEqual(decideBeforeLookup(cfg, args('kube-system', 'coredns-1')), {
    capture: false,
    reason: 'excluded namespace',
  });
  assert.deepEqual(decideBeforeLookup({ ...cfg, ambientEnabled: false }, args('default', 'web')), {
    capture: false,
    reason: 'ambient disabled',
  });
  assert.equal(decideBeforeLookup(cfg, args('default', 'web')), undefined, 'anything else needs the pod');
});

test('decided from the pod: host network and sidecar pods never, else the enablement selectors', () => {
  assert.deepEqual(decideForPod(cfg, pod({ labels: AMBIENT })), { capture: true });
  assert.deepEqual(decideForPod(cfg, pod({ namespaceLabels: AMBIENT })), { capture: true });
  assert.deepEqual(decideForPod(cfg, pod({ labels: AMBIENT, hostNetwork: true })), {
    capture: false,
    reason: 'host network',
  });
  assert.deepEqual(decideForPod(cfg, pod({ labels: AMBIENT, annotations: { 'sidecar.istio.io/status': '{}' } })), {
    capture: false,
    reason: 'has a sidecar',
  });
  assert.deepEqual(decideForPod(cfg, pod({})), { capture: false, reason: 'not selected' });
});

test("the ztunnel pod is not captured in an ambient namespace: Istio's chart labels it istio.io/dataplane-mode=none", () => {
  assert.deepEqual(
    decideForPod(cfg, pod({ labels: { app: 'ztunnel', 'istio.io/dataplane-mode': 'none' }, namespaceLabels: AMBIENT })),
    { capture: false, reason: 'not selected' },
  );
});
