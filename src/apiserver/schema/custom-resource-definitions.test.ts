import { test } from 'node:test';
import assert from 'node:assert/strict';
import { istioCustomResourceDefinitions } from './custom-resource-definitions.js';

interface Crd {
  metadata: { name: string; labels: Record<string, string>; annotations: Record<string, string> };
  spec: {
    group: string;
    names: { shortNames?: string[]; categories: string[] };
    scope: string;
    versions: {
      name: string;
      served: boolean;
      storage: boolean;
      subresources: object;
      additionalPrinterColumns?: { name: string }[];
    }[];
  };
}

const crds = (): Crd[] => istioCustomResourceDefinitions() as unknown as Crd[];

test("Istio's CRDs come as the base chart installs them: every kind, crd-all.gen.yaml's order, names, labels, versions", () => {
  const all = crds();
  assert.deepEqual(
    all.map((c) => c.metadata.name),
    [
      'trafficextensions.extensions.istio.io',
      'wasmplugins.extensions.istio.io',
      'destinationrules.networking.istio.io',
      'envoyfilters.networking.istio.io',
      'gateways.networking.istio.io',
      'proxyconfigs.networking.istio.io',
      'serviceentries.networking.istio.io',
      'sidecars.networking.istio.io',
      'virtualservices.networking.istio.io',
      'workloadentries.networking.istio.io',
      'workloadgroups.networking.istio.io',
      'authorizationpolicies.security.istio.io',
      'peerauthentications.security.istio.io',
      'requestauthentications.security.istio.io',
      'telemetries.telemetry.istio.io',
    ],
  );
  const ap = all.find((c) => c.metadata.name === 'authorizationpolicies.security.istio.io')!;
  assert.deepEqual(ap.metadata.labels, {
    app: 'istio-pilot',
    chart: 'istio',
    heritage: 'Tiller',
    istio: 'security',
    release: 'istio',
  });
  assert.deepEqual(ap.metadata.annotations, { 'helm.sh/resource-policy': 'keep' });
  assert.deepEqual(
    [ap.spec.scope, ap.spec.names.shortNames, ap.spec.names.categories],
    ['Namespaced', ['ap'], ['istio-io', 'security-istio-io']],
  );
  assert.deepEqual(
    ap.spec.versions.map((v) => [v.name, v.served, v.storage, v.additionalPrinterColumns?.map((c) => c.name)]),
    [
      ['v1', true, true, ['Action', 'Age']],
      ['v1beta1', true, false, ['Action', 'Age']],
    ],
  );
  const telemetry = all.find((c) => c.metadata.name === 'telemetries.telemetry.istio.io')!;
  assert.deepEqual(
    telemetry.spec.versions.map((v) => [v.name, v.storage]),
    [
      ['v1', false],
      ['v1alpha1', true],
    ],
  );
  for (const c of all) for (const v of c.spec.versions) assert.deepEqual(v.subresources, { status: {} });
});

test("labels given replace crd-all.gen.yaml's, as the chart's templates do; each call returns fresh objects", () => {
  const labels = { 'app.kubernetes.io/part-of': 'istio' };
  assert.ok(crds().every((c) => c.metadata.labels.app === 'istio-pilot'));
  const templated = istioCustomResourceDefinitions(labels) as unknown as Crd[];
  assert.ok(templated.every((c) => JSON.stringify(c.metadata.labels) === JSON.stringify(labels)));
  templated[0]!.spec.group = 'changed';
  assert.equal(crds()[0]!.spec.group, 'extensions.istio.io');
});
