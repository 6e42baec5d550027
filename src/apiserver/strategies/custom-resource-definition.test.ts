import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeObject } from '../kube-object.js';
import { istioCustomResourceDefinitions } from '../schema/custom-resource-definitions.js';
import { findKind } from '../kinds.js';
import { customResourceDefinitionStrategy } from './custom-resource-definition.js';

const strategy = customResourceDefinitionStrategy(findKind);

function crd(name: string): KubeObject {
  const found = istioCustomResourceDefinitions().find((c) => (c as KubeObject).metadata.name === name);
  return structuredClone(found) as KubeObject;
}

function conditions(o: KubeObject): string[] {
  const status = o.status as { conditions: { type: string; status: string; reason: string }[] };
  return status.conditions.map((c) => `${c.type}=${c.status} ${c.reason}`);
}

test('a CRD naming a kind the server has built in is Established at once, with its accepted names and storage version', () => {
  const ap = crd('authorizationpolicies.security.istio.io');
  strategy.prepareForCreate!(ap);
  assert.deepEqual(strategy.validate!(ap), []);
  assert.deepEqual(conditions(ap), ['NamesAccepted=True NoConflicts', 'Established=True InitialNamesAccepted']);
  const status = ap.status as { acceptedNames: { kind: string; shortNames: string[] }; storedVersions: string[] };
  assert.deepEqual(
    [status.acceptedNames.kind, status.acceptedNames.shortNames, status.storedVersions],
    ['AuthorizationPolicy', ['ap'], ['v1']],
  );
});

test('a CRD of a kind the server does not serve is stored with Established False, reason NotServed', () => {
  const ef = crd('envoyfilters.networking.istio.io');
  strategy.prepareForCreate!(ef);
  assert.deepEqual(strategy.validate!(ef), []);
  assert.deepEqual(conditions(ef), ['NamesAccepted=True NoConflicts', 'Established=False NotServed']);
});

test('an update keeps the conditions transition times and adds a new storage version to storedVersions', () => {
  const old = crd('peerauthentications.security.istio.io');
  strategy.prepareForCreate!(old);
  const before = (old.status as { conditions: { lastTransitionTime: string }[] }).conditions[1]!.lastTransitionTime;
  const next = structuredClone(old);
  const versions = (next.spec as { versions: { storage: boolean; name: string }[] }).versions;
  for (const v of versions) v.storage = v.name === 'v1beta1';
  strategy.prepareForUpdate!(next, old);
  const status = next.status as { conditions: { lastTransitionTime: string }[]; storedVersions: string[] };
  assert.equal(status.conditions[1]!.lastTransitionTime, before);
  assert.deepEqual(status.storedVersions, ['v1', 'v1beta1']);
  assert.equal(next.metadata.generation, 2);
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
