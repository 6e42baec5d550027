import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeObject } from '../kube-object.js';
import { istioCustomResourceDefinitions } from '../schema/custom-resource-definitions.js';
import { customResourceDefinitionStrategy as strategy } from './custom-resource-definition.js';

function crd(name: string): KubeObject {
  const found = istioCustomResourceDefinitions().find((c) => (c as KubeObject).metadata.name === name);
  return structuredClone(found) as KubeObject;
}

test('a new CRD is valid as Istio ships it, its status holds its storage version; an update adds a new storage version', () => {
  const old = crd('peerauthentications.security.istio.io');
  strategy.prepareForCreate!(old);
  assert.deepEqual(strategy.validate!(old), []);
  assert.deepEqual(old.status, { storedVersions: ['v1'] });
  const next = structuredClone(old);
  const versions = (next.spec as { versions: { storage: boolean; name: string }[] }).versions;
  for (const v of versions) v.storage = v.name === 'v1beta1';
  strategy.prepareForUpdate!(next, old);
  assert.deepEqual(next.status, { storedVersions: ['v1', 'v1beta1'] });
  assert.equal(next.metadata.generation, 2);
  assert.deepEqual(strategy.validateUpdate!(next, old), []);
});

test('names are defaulted (singular, listKind) and checked: name, group with a dot, scope, one storage version, schema root type', () => {
  const bad: KubeObject = {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'widgets.example' },
    spec: {
      group: 'example',
      scope: 'Global',
      names: { plural: 'widgets', kind: 'Widget' },
      versions: [{ name: 'v1', served: true, storage: false, schema: { openAPIV3Schema: { properties: {} } } }],
    },
  };
  strategy.prepareForCreate!(bad);
  assert.deepEqual((bad.spec as { names: object }).names, {
    plural: 'widgets',
    kind: 'Widget',
    singular: 'widget',
    listKind: 'WidgetList',
  });
  assert.deepEqual(
    strategy.validate!(bad).map((c) => `${c.field ?? ''}: ${c.message}`),
    [
      'spec.group: Invalid value: "example": should be a domain with at least one dot',
      'spec.scope: Unsupported value: "Global": supported values: "Cluster", "Namespaced"',
      'spec.versions: Invalid value: []apiextensions.CustomResourceDefinitionVersion{...}: must have exactly one version marked as storage version',
      'spec.versions[0].schema.openAPIV3Schema.type: Required value: must not be empty at the root',
    ],
  );
  const misnamed = crd('sidecars.networking.istio.io');
  misnamed.metadata.name = 'sidecar.networking.istio.io';
  assert.deepEqual(
    strategy.validate!(misnamed).map((c) => `${c.field ?? ''}: ${c.message}`),
    ['metadata.name: Invalid value: "sidecar.networking.istio.io": must be spec.names.plural+"."+spec.group'],
  );
});
