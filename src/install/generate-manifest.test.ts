import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { RenderedObject } from './chart-helpers.js';
import { generateManifest } from './generate-manifest.js';
import { parseSetFlag } from './set-flag.js';
import { at } from './value-tree.js';

function objects(sets: string[], files: { name: string; text: string }[] = []): RenderedObject[] {
  return generateManifest({ files, sets: sets.map(parseSetFlag) }).sets.flatMap((s) => s.objects);
}
function find(all: RenderedObject[], kind: string, name: string): RenderedObject {
  const o = all.find((x) => x.kind === kind && x.metadata.name === name);
  assert.ok(o, `${kind} ${name} is rendered`);
  return o;
}
const container = (o: RenderedObject): Record<string, unknown> =>
  (at(o, 'spec.template.spec.containers') as Record<string, unknown>[])[0]!;
const env = (o: RenderedObject): Record<string, unknown> =>
  Object.fromEntries((container(o)['env'] as { name: string; value?: string }[]).map((e) => [e.name, e.value]));

test('all three components run the one amesh image; a component image value overrides it, as a name or a reference', () => {
  const all = objects(['profile=ambient', 'values.global.hub=registry.example', 'values.global.tag=1.2.3']);
  for (const [kind, name] of [
    ['Deployment', 'istiod'],
    ['DaemonSet', 'istio-cni-node'],
    ['DaemonSet', 'ztunnel'],
  ] as const)
    assert.equal(container(find(all, kind, name))['image'], 'registry.example/amesh:1.2.3', name);
  const custom = objects([
    'profile=ambient',
    'values.pilot.image=other.example/istiod:x',
    'values.cni.image=agent',
    'values.ztunnel.image=zt:dev',
  ]);
  assert.equal(container(find(custom, 'Deployment', 'istiod'))['image'], 'other.example/istiod:x');
  assert.match(String(container(find(custom, 'DaemonSet', 'istio-cni-node'))['image']), /^localhost\/agent:/);
  assert.equal(container(find(custom, 'DaemonSet', 'ztunnel'))['image'], 'zt:dev');
});

test('containers run amesh’s own commands', () => {
  const all = objects(['profile=ambient']);
  assert.deepEqual(container(find(all, 'Deployment', 'istiod'))['command'], ['amesh']);
  assert.deepEqual(container(find(all, 'Deployment', 'istiod'))['args'], [
    'istiod',
    '--state-dir',
    '/var/lib/amesh/istiod',
    '--log-level',
    'info',
  ]);
  assert.deepEqual(container(find(all, 'DaemonSet', 'istio-cni-node'))['args'], ['cni-agent', '--log-level', 'info']);
  assert.deepEqual(container(find(all, 'DaemonSet', 'ztunnel'))['args'], ['ztunnel']);
});

test('meshConfig.trustDomain reaches the mesh ConfigMap, and istiod and ztunnel through TRUST_DOMAIN', () => {
  const all = objects(['profile=ambient', 'meshConfig.trustDomain=example.org']);
  assert.match(String(at(find(all, 'ConfigMap', 'istio'), 'data.mesh')), /^trustDomain: example.org$/m);
  assert.equal(env(find(all, 'Deployment', 'istiod'))['TRUST_DOMAIN'], 'example.org');
  assert.equal(env(find(all, 'DaemonSet', 'ztunnel'))['TRUST_DOMAIN'], 'example.org');
});

test('the token audience follows values.global.sds.token.aud for istiod and ztunnel, which istiod then accepts', () => {
  const all = objects(['profile=ambient', 'values.global.sds.token.aud=mesh-ca']);
  const audience = (o: RenderedObject): unknown =>
    at(
      (at(o, 'spec.template.spec.volumes') as { name: string }[]).find((v) => v.name === 'istio-token'),
      'projected.sources.0.serviceAccountToken.audience',
    );
  assert.equal(audience(find(all, 'Deployment', 'istiod')), 'mesh-ca');
  assert.equal(audience(find(all, 'DaemonSet', 'ztunnel')), 'mesh-ca');
  assert.equal(env(find(all, 'Deployment', 'istiod'))['TOKEN_AUDIENCES'], 'mesh-ca');
});

test('istiod autoscales by default (an HPA, no replicas, no PDB); with autoscaling off and 2 replicas it has a PDB', () => {
  const dflt = objects([]);
  assert.equal(at(find(dflt, 'Deployment', 'istiod'), 'spec.replicas'), undefined);
  find(dflt, 'HorizontalPodAutoscaler', 'istiod');
  assert.equal(
    dflt.find((o) => o.kind === 'PodDisruptionBudget'),
    undefined,
  );
  const fixed = objects(['values.pilot.autoscaleEnabled=false', 'values.pilot.replicaCount=2']);
  assert.equal(at(find(fixed, 'Deployment', 'istiod'), 'spec.replicas'), 2);
  assert.deepEqual(at(find(fixed, 'PodDisruptionBudget', 'istiod'), 'spec.minAvailable'), 1);
  assert.equal(
    fixed.find((o) => o.kind === 'HorizontalPodAutoscaler' && o.metadata.name === 'istiod'),
    undefined,
  );
});

test('components.<name>.k8s settings patch the workload as istioctl’s strategic merge patches do', () => {
  const all = objects(
    [],
    [
      {
        name: 'iop.yaml',
        text: `
spec:
  profile: ambient
  components:
    ztunnel:
      k8s:
        resources: {requests: {cpu: 100m}, limits: {cpu: 200m}}
        env: [{name: EXTRA, value: "1"}, {name: RUST_LOG, value: debug}]
    pilot:
      k8s:
        nodeSelector: {disk: ssd}
        podDisruptionBudget: {maxUnavailable: 1}
        replicaCount: 2
        hpaSpec: {minReplicas: 2}
`,
      },
    ],
  );
  const zt = find(all, 'DaemonSet', 'ztunnel');
  assert.deepEqual(container(zt)['resources'], { requests: { cpu: '100m', memory: '512Mi' }, limits: { cpu: '200m' } });
  assert.equal(env(zt)['EXTRA'], '1');
  assert.equal(env(zt)['RUST_LOG'], 'debug', 'env entries merge by name');
  assert.deepEqual(at(find(all, 'Deployment', 'istiod'), 'spec.template.spec.nodeSelector'), { disk: 'ssd' });
  assert.deepEqual(at(find(all, 'PodDisruptionBudget', 'istiod'), 'spec.maxUnavailable'), 1);
  assert.equal(at(find(all, 'PodDisruptionBudget', 'istiod'), 'spec.minAvailable'), undefined);
});

test('defaultRevision renders the base chart’s istiod-default-validator; istioctl’s default profile leaves it out', () => {
  assert.equal(
    objects([]).find((o) => o.metadata.name === 'istiod-default-validator'),
    undefined,
  );
  const v = find(
    objects(['values.defaultRevision=default']),
    'ValidatingWebhookConfiguration',
    'istiod-default-validator',
  );
  assert.equal(at(v, 'webhooks.0.name'), 'validation.istio.io');
  assert.equal(at(v, 'webhooks.0.failurePolicy'), 'Ignore');
});

test('a revision names istiod’s objects after it', () => {
  const all = objects(['revision=canary']);
  find(all, 'Deployment', 'istiod-canary');
  find(all, 'ValidatingWebhookConfiguration', 'istio-validator-canary-istio-system');
  assert.equal(env(find(all, 'Deployment', 'istiod-canary'))['REVISION'], 'canary');
});

test("Istio's CRDs, relabelled with the chart's labels, come first in the manifest", () => {
  const { sets } = generateManifest({ files: [], sets: [] });
  const crds = sets[0]!.objects.filter((o) => o.kind === 'CustomResourceDefinition');
  assert.equal(sets[0]!.objects[0]!.kind, 'CustomResourceDefinition');
  assert.ok(crds.some((c) => c.metadata.name === 'authorizationpolicies.security.istio.io'));
  for (const c of crds) {
    assert.equal(c.metadata.labels?.['app.kubernetes.io/part-of'], 'istio', c.metadata.name);
    assert.equal(c.metadata.labels?.['heritage'], undefined, c.metadata.name);
  }
});
