import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseManifests } from '../registry/manifest-dir.js';
import { podWorkloadName } from './workloads.js';

const pod = (meta: string): ReturnType<typeof parseManifests>['objects'][number] => {
  const { objects, errors } = parseManifests(
    'p.yaml',
    `apiVersion: v1\nkind: Pod\nmetadata:\n  namespace: shop\n${meta}`,
  );
  assert.deepEqual(errors, []);
  return objects[0]!;
};
const owner = (kind: string, name: string, controller = true): string =>
  `  ownerReferences: [{apiVersion: apps/v1, kind: ${kind}, name: ${name}, uid: x, controller: ${String(controller)}}]\n`;

/** istio `pkg/kube/util.go` `GetWorkloadMetaFromPod`, case by case; the `app` label never names the workload. */
const cases: { name: string; meta: string; want: string }[] = [
  {
    name: 'ReplicaSet <deployment>-<pod-template-hash> → the Deployment',
    meta: `  name: web-7d4b9c-x2x\n  generateName: web-7d4b9c-\n  labels: {app: shop-web, pod-template-hash: 7d4b9c}\n${owner('ReplicaSet', 'web-7d4b9c')}`,
    want: 'web',
  },
  {
    name: 'ReplicaSet without the hash label → the ReplicaSet',
    meta: `  name: rs-abc\n  generateName: rs-\n${owner('ReplicaSet', 'rs')}`,
    want: 'rs',
  },
  {
    name: 'Job <cronjob>-<8..10 digits> → the CronJob',
    meta: `  name: backup-28391520-abcde\n  generateName: backup-28391520-\n${owner('Job', 'backup-28391520')}`,
    want: 'backup',
  },
  {
    name: 'a Job not named by a CronJob → the Job',
    meta: `  name: migrate-abcde\n  generateName: migrate-\n${owner('Job', 'migrate')}`,
    want: 'migrate',
  },
  {
    name: 'StatefulSet → the StatefulSet',
    meta: `  name: db-0\n  generateName: db-\n${owner('StatefulSet', 'db')}`,
    want: 'db',
  },
  {
    name: 'an owner that is not the controller is not used',
    meta: `  name: web-0\n  generateName: web-\n${owner('ReplicaSet', 'web-1', false)}`,
    want: 'web-0',
  },
  {
    name: 'a pod whose name was not generated keeps its own name',
    meta: `  name: web-0\n  labels: {app: web}\n${owner('StatefulSet', 'web')}`,
    want: 'web-0',
  },
  {
    name: 'service.istio.io/workload-name overrides',
    meta: `  name: web-0\n  labels: {service.istio.io/workload-name: storefront}\n`,
    want: 'storefront',
  },
];

for (const c of cases) {
  test(`workload_name from the pod's owner: ${c.name}`, () => {
    assert.equal(podWorkloadName(pod(c.meta)), c.want);
  });
}
