import { test } from 'node:test';
import assert from 'node:assert/strict';
import { objectKey, parseManifests, type Manifest } from '../registry/manifest-dir.js';
import { buildMeshModel } from './mesh-model.js';
import { IncrementalMeshModel } from './incremental-mesh-model.js';

const CFG = {
  clusterId: 'Kubernetes',
  trustDomain: 'cluster.local',
  rootNamespace: 'istio-system',
  domainSuffix: 'cluster.local',
  ipAutoallocate: true,
};

function objects(yaml: string): readonly Manifest[] {
  const { objects: out, errors } = parseManifests('m.yaml', yaml);
  assert.deepEqual(errors, []);
  return out;
}

/**
 * Every kind the model reads, with cross-object effects: selection, backends (by selector and by EndpointSlice),
 * localities, policy keys, port-level mTLS.
 */
const MESH = objects(`
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {topology.kubernetes.io/region: r1, topology.kubernetes.io/zone: z1}}
---
apiVersion: v1
kind: Pod
metadata: {name: web-0, namespace: shop, labels: {app: web}, annotations: {ambient.istio.io/redirection: enabled}}
spec: {serviceAccountName: web, nodeName: n1, containers: [{name: c, ports: [{name: http, containerPort: 8080}]}]}
status: {phase: Running, podIP: 10.1.0.5}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: db-ext-1, namespace: shop, labels: {kubernetes.io/service-name: db-ext}}
addressType: IPv4
endpoints: [{addresses: [10.1.0.6], targetRef: {kind: Pod, namespace: shop, name: db-0}}, {addresses: [10.3.0.1]}]
ports: [{name: pg, port: 5432, protocol: TCP}]
---
apiVersion: v1
kind: Pod
metadata: {name: db-0, namespace: shop, labels: {app: db}}
spec: {nodeName: n1}
status: {phase: Running, podIP: 10.1.0.6}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec: {clusterIP: 10.96.0.20, selector: {app: web}, ports: [{port: 80, targetPort: http}]}
---
apiVersion: v1
kind: Service
metadata: {name: db-ext, namespace: shop}
spec: {clusterIP: 10.96.0.21, ports: [{name: pg, port: 5432}]}
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: web-alias, namespace: shop}
spec: {hosts: [web.shop.svc.cluster.local, alias.example], ports: [{number: 80, name: http}], workloadSelector: {labels: {app: web}}}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: vm-1, namespace: shop}
spec: {address: 10.2.0.1, labels: {app: db}}
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: web-only, namespace: shop}
spec: {selector: {matchLabels: {app: web}}, rules: [{}]}
---
apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: default, namespace: istio-system}
spec: {mtls: {mode: STRICT}}
---
apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: db-ports, namespace: shop}
spec: {selector: {matchLabels: {app: db}}, portLevelMtls: {"5432": {mode: PERMISSIVE}}}
`);

const find = (key: string): Manifest => MESH.find((o) => objectKey(o) === key)!;
const POD_EDIT = { ...find('Pod/shop/web-0'), status: { phase: 'Running', podIP: '10.1.0.9' } } as Manifest;
const NODE: Manifest = find('Node//n1');
const NODE_EDIT: Manifest = {
  ...NODE,
  metadata: { ...NODE.metadata, labels: { 'topology.kubernetes.io/region': 'r2' } },
};

/** `o` with `spec` merged into its spec (each edit below keeps its kind's spec valid). */
const withSpec = (o: Manifest, spec: Record<string, unknown>): Manifest =>
  ({ ...o, spec: { ...o.spec, ...spec } }) as Manifest;
/** Edits that move each shared kind's selection from the web workloads to the db ones (the slice's, from db to web). */
const SELECTOR_EDITS: readonly [string, (o: Manifest) => Manifest][] = [
  ['Service/shop/web', (o) => withSpec(o, { selector: { app: 'db' } })],
  ['ServiceEntry/shop/web-alias', (o) => withSpec(o, { workloadSelector: { labels: { app: 'db' } } })],
  ['AuthorizationPolicy/shop/web-only', (o) => withSpec(o, { selector: { matchLabels: { app: 'db' } } })],
  ['PeerAuthentication/shop/db-ports', (o) => withSpec(o, { selector: { matchLabels: { app: 'web' } } })],
  [
    'EndpointSlice/shop/db-ext-1',
    (o) =>
      withSpec(o, {
        endpoints: [{ addresses: ['10.1.0.5'], targetRef: { kind: 'Pod', namespace: 'shop', name: 'web-0' } }],
      }),
  ],
  ['Service/shop/db-ext', (o) => withSpec(o, { ports: [{ name: 'pg', port: 5433, targetPort: 5432 }] })],
];

const plain = (m: {
  addresses: ReadonlyMap<string, unknown>;
  authorizations: ReadonlyMap<string, unknown>;
}): unknown => ({
  addresses: Object.fromEntries([...m.addresses].sort(([a], [b]) => (a < b ? -1 : 1))),
  authorizations: Object.fromEntries([...m.authorizations].sort(([a], [b]) => (a < b ? -1 : 1))),
});

test('objects added, edited and deleted one at a time give the model built from the final objects at every step', () => {
  const model = new IncrementalMeshModel(CFG);
  const current = new Map<string, Manifest>();
  const step = (key: string, o: Manifest | undefined): void => {
    if (o === undefined) current.delete(key);
    else current.set(key, o);
    model.update(new Map([[key, o]]));
    assert.deepEqual(
      plain(model),
      plain(buildMeshModel([...current.values()], CFG)),
      `after ${o === undefined ? 'deleting' : 'setting'} ${key}`,
    );
  };
  // Leaves first, shared objects after: each shared object's arrival must re-derive the workloads already there.
  for (const o of [...MESH].reverse()) step(objectKey(o), o);
  step(objectKey(POD_EDIT), POD_EDIT);
  step(objectKey(NODE_EDIT), NODE_EDIT);
  // Shared objects whose selectors move from one workload to another: both the old and the new match re-derive.
  for (const [key, edit] of SELECTOR_EDITS) step(key, edit(find(key)));
  for (const o of MESH) step(objectKey(o), undefined);
  assert.equal(model.addresses.size, 0);
  assert.equal(model.authorizations.size, 0);
});

test("one pod's edit reports only that pod's workload as changed", () => {
  const model = new IncrementalMeshModel(CFG);
  model.replaceAll(MESH);
  const c = model.update(new Map([[objectKey(POD_EDIT), POD_EDIT]]));
  assert.deepEqual([...c.addresses], ['Kubernetes//Pod/shop/web-0']);
  assert.deepEqual([...c.authorizations], []);
});

test("a node's edit re-derives the workloads on that node and reports only those whose resource changed", () => {
  const model = new IncrementalMeshModel(CFG);
  model.replaceAll(MESH);
  const c = model.update(new Map([[objectKey(NODE_EDIT), NODE_EDIT]]));
  assert.deepEqual([...c.addresses].sort(), ['Kubernetes//Pod/shop/db-0', 'Kubernetes//Pod/shop/web-0']);
});

test('a port-level mTLS policy shared by two workloads stays until the last of them leaves', () => {
  const model = new IncrementalMeshModel(CFG);
  model.replaceAll(MESH);
  const converted = 'shop/converted_peer_authentication_db-ports';
  assert.ok(model.authorization(converted) !== undefined);
  model.update(new Map([['Pod/shop/db-0', undefined]]));
  assert.ok(model.authorization(converted) !== undefined, 'still held by the WorkloadEntry');
  const c = model.update(new Map([['WorkloadEntry/shop/vm-1', undefined]]));
  assert.equal(model.authorization(converted), undefined);
  assert.ok(c.authorizations.has(converted));
});
