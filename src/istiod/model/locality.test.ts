import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseManifests } from '../registry/manifest-dir.js';
import { buildMeshModel } from './mesh-model.js';
import type { LocalityModel } from './types.js';

const CFG = {
  clusterId: 'Kubernetes',
  trustDomain: 'cluster.local',
  rootNamespace: 'istio-system',
  domainSuffix: 'cluster.local',
  ipAutoallocate: true,
};

const node = (name: string, labels: string): string =>
  `---\napiVersion: v1\nkind: Node\nmetadata: {name: ${name}, labels: {${labels}}}\n`;
const pod = (spec: string, labels = ''): string =>
  `---\napiVersion: v1\nkind: Pod\nmetadata: {name: p-0, namespace: shop, labels: {${labels}}}\nspec: {${spec}}\nstatus: {podIP: 10.1.0.1}\n`;
const NODES =
  node(
    'n-full',
    'topology.kubernetes.io/region: eu-west1, topology.kubernetes.io/zone: eu-west1-b, topology.istio.io/subzone: rack7',
  ) +
  node('n-zone', 'topology.kubernetes.io/zone: eu-west1-c') +
  node('n-bare', 'kubernetes.io/hostname: n-bare');

/** istio `nodes.go` `nodeLocality` + `workloads.go` `getPodLocality` / `getWorkloadEntryLocality`, case by case. */
const cases: { name: string; yaml: string; uid: string; want: LocalityModel | undefined }[] = [
  {
    name: "a pod takes its node's region, zone and subzone labels",
    yaml: NODES + pod('nodeName: n-full'),
    uid: 'Kubernetes//Pod/shop/p-0',
    want: { region: 'eu-west1', zone: 'eu-west1-b', subzone: 'rack7' },
  },
  {
    name: 'a node with only a zone label gives only a zone',
    yaml: NODES + pod('nodeName: n-zone'),
    uid: 'Kubernetes//Pod/shop/p-0',
    want: { region: '', zone: 'eu-west1-c', subzone: '' },
  },
  {
    name: 'a node without topology labels gives no locality',
    yaml: NODES + pod('nodeName: n-bare'),
    uid: 'Kubernetes//Pod/shop/p-0',
    want: undefined,
  },
  {
    name: 'a node that is not in the directory gives no locality',
    yaml: NODES + pod('nodeName: n-missing'),
    uid: 'Kubernetes//Pod/shop/p-0',
    want: undefined,
  },
  {
    name: 'an unscheduled pod (no nodeName) has no locality',
    yaml: NODES + pod(''),
    uid: 'Kubernetes//Pod/shop/p-0',
    want: undefined,
  },
  {
    name: "the istio-locality pod label is not read (Istio's ambient controller ignores it)",
    yaml: NODES + pod('nodeName: n-bare', 'istio-locality: us-east1.us-east1-a'),
    uid: 'Kubernetes//Pod/shop/p-0',
    want: undefined,
  },
  {
    name: 'a WorkloadEntry locality region/zone/subzone is split on "/"',
    yaml: '---\napiVersion: networking.istio.io/v1\nkind: WorkloadEntry\nmetadata: {name: vm, namespace: shop}\nspec: {address: 10.30.0.1, locality: us-east1/us-east1-a/r2}\n',
    uid: 'Kubernetes/networking.istio.io/WorkloadEntry/shop/vm',
    want: { region: 'us-east1', zone: 'us-east1-a', subzone: 'r2' },
  },
  {
    name: 'a ServiceEntry endpoint locality with the region only',
    yaml: '---\napiVersion: networking.istio.io/v1\nkind: ServiceEntry\nmetadata: {name: db, namespace: shop}\nspec: {hosts: [db.example.com], ports: [{number: 5432, name: pg}], resolution: STATIC, endpoints: [{address: 10.20.0.1, locality: us-east1}]}\n',
    uid: 'Kubernetes/networking.istio.io/ServiceEntry/shop/db/10.20.0.1',
    want: { region: 'us-east1', zone: '', subzone: '' },
  },
];

for (const c of cases) {
  test(`Workload.locality: ${c.name}`, () => {
    const { objects, errors } = parseManifests('m.yaml', c.yaml);
    assert.deepEqual(errors, []);
    const a = buildMeshModel(objects, CFG).addresses.get(c.uid);
    assert.ok(a !== undefined && 'workload' in a, `no workload ${c.uid}`);
    assert.deepEqual(a.workload.locality, c.want);
  });
}

test('a Node is cluster-scoped: it has no namespace and is keyed by name alone', () => {
  const { objects, errors, warnings } = parseManifests('m.yaml', node('n1', 'topology.kubernetes.io/zone: z1'));
  assert.deepEqual(errors, []);
  assert.deepEqual(warnings, [], 'Node is a kind amesh reads');
  assert.equal(objects[0]?.metadata.namespace, '');
});
