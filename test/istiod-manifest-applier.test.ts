import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { cp, mkdir, mkdtemp, readFile, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { silentLogs } from './helpers/captured-logs.js';
import { ManifestDirectory } from '../src/istiod/registry/manifest-directory.js';
import { APPLYSET, ManifestApplier } from '../src/istiod/registry/manifest-applier.js';
import { startApiServer } from './helpers/in-process.js';
import { ApiFront } from './helpers/api-front.js';
import { localMeshPodIp } from './helpers/local-mesh-example.js';
import { namespaces } from './helpers/manifests.js';
import type { ApiServer } from '../src/apiserver/api-server.js';

const EXTRA = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: api, namespace: backend}
spec:
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec: {containers: [{name: api, image: amesh-echo}]}
---
apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: api-5d9c
  namespace: backend
  ownerReferences: [{apiVersion: apps/v1, kind: Deployment, name: api, controller: true}]
spec:
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec: {containers: [{name: api, image: amesh-echo}]}
---
apiVersion: v1
kind: Service
metadata: {name: api, namespace: backend}
spec:
  selector: {app: api}
  ports: [{port: 8080}]
`;

describe('applying a manifest directory to the API as kubectl apply --prune with an ApplySet', () => {
  let dir: string;
  let api: ApiServer;
  let directory: ManifestDirectory;
  let applier: ManifestApplier;
  let core: k8s.CoreV1Api;
  let custom: k8s.CustomObjectsApi;
  let apps: k8s.AppsV1Api;

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'amesh-applier-'));
    await cp('examples/local-mesh', path.join(dir, 'config'), { recursive: true });
    await writeFile(path.join(dir, 'config', 'extra.yaml'), EXTRA);
    api = await startApiServer(path.join(dir, 'data'));
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(api.kubeconfigPath);
    core = kc.makeApiClient(k8s.CoreV1Api);
    custom = kc.makeApiClient(k8s.CustomObjectsApi);
    apps = kc.makeApiClient(k8s.AppsV1Api);
    const logs = silentLogs('istiod');
    directory = new ManifestDirectory(path.join(dir, 'config'), logs.scope('directory'));
    applier = new ManifestApplier(directory, kc, logs.scope('applier'));
    await directory.reload();
  });
  after(async () => {
    directory.stop();
    await api.stop();
    await rm(dir, { recursive: true, force: true });
  });

  test('every object is created as an ApplySet member, pod status is reported through pods/status, owners get their uid', async () => {
    const r = await applier.apply();
    assert.deepEqual(r.errors, []);
    const pod = await core.readNamespacedPod({ name: 'echo-0', namespace: 'backend' });
    assert.equal(pod.status?.podIP, localMeshPodIp('backend', 'echo-0'));
    assert.equal(pod.status?.phase, 'Running');
    assert.equal(pod.metadata?.labels?.['applyset.kubernetes.io/part-of'], APPLYSET);
    const rs = await apps.readNamespacedReplicaSet({ name: 'api-5d9c', namespace: 'backend' });
    const deploy = await apps.readNamespacedDeployment({ name: 'api', namespace: 'backend' });
    assert.equal(rs.metadata?.ownerReferences?.[0]?.uid, deploy.metadata?.uid);
    const parent = await core.readNamespacedConfigMap({ name: 'amesh-config-dir', namespace: 'kube-system' });
    assert.equal(parent.metadata?.labels?.['applyset.kubernetes.io/id'], APPLYSET);
    assert.match(
      parent.metadata?.annotations?.['applyset.kubernetes.io/contains-group-kinds'] ?? '',
      /AuthorizationPolicy\.security\.istio\.io/,
    );
  });

  test('applying again changes nothing, and keeps what the server filled in (an allocated ClusterIP)', async () => {
    const ip = (await core.readNamespacedService({ name: 'api', namespace: 'backend' })).spec?.clusterIP;
    const r = await applier.apply();
    assert.equal(r.applied, 0);
    assert.equal((await core.readNamespacedService({ name: 'api', namespace: 'backend' })).spec?.clusterIP, ip);
  });

  test('an edited file is patched (spec and labels), and a document the API refuses is reported with file:line while the rest applies', async () => {
    const file = path.join(dir, 'config', 'policies.yaml');
    await writeFile(file, (await readFile(file, 'utf8')).replace('action: ALLOW', 'action: DENY'));
    const workloads = path.join(dir, 'config', 'workloads.yaml');
    await writeFile(
      workloads,
      (await readFile(workloads, 'utf8')).replace('labels: {app: web, version: v1}', 'labels: {app: web, version: v2}'),
    );
    await writeFile(
      path.join(dir, 'config', 'bad.yaml'),
      'apiVersion: v1\nkind: Pod\nmetadata: {name: no-containers, namespace: backend}\nspec: {nodeName: node1}\n',
    );
    await directory.reload();
    const r = await applier.apply();
    assert.equal(r.errors.length, 1);
    assert.match(
      r.errors[0] ?? '',
      /bad\.yaml:1: Pod backend\/no-containers: the API refused it: .*spec\.containers: Required value/,
    );
    const ap = (await custom.getNamespacedCustomObject({
      group: 'security.istio.io',
      version: 'v1',
      namespace: 'backend',
      plural: 'authorizationpolicies',
      name: 'allow-web',
    })) as { spec: { action: string } };
    assert.equal(ap.spec.action, 'DENY');
    const web = await core.readNamespacedPod({ name: 'web-0', namespace: 'frontend' });
    assert.equal(web.metadata?.labels?.['version'], 'v2');
    assert.equal(web.metadata?.labels?.['applyset.kubernetes.io/part-of'], APPLYSET, 'still a member of the set');
  });

  test('objects whose file is removed are pruned; objects others created are not touched', async () => {
    await core.createNamespacedConfigMap({ namespace: 'backend', body: { metadata: { name: 'not-ours' } } });
    await unlink(path.join(dir, 'config', 'extra.yaml'));
    await unlink(path.join(dir, 'config', 'bad.yaml'));
    await directory.reload();
    const r = await applier.apply();
    assert.equal(r.pruned, 3);
    await assert.rejects(
      apps.readNamespacedDeployment({ name: 'api', namespace: 'backend' }),
      (e: unknown) => (e as { code?: number }).code === 404,
    );
    await assert.rejects(
      core.readNamespacedService({ name: 'api', namespace: 'backend' }),
      (e: unknown) => (e as { code?: number }).code === 404,
    );
    assert.equal(
      (await core.readNamespacedConfigMap({ name: 'not-ours', namespace: 'backend' })).metadata?.name,
      'not-ours',
    );
    assert.equal((await core.readNamespacedPod({ name: 'echo-0', namespace: 'backend' })).metadata?.name, 'echo-0');
  });
});

describe('an owner the API cannot be asked about', () => {
  let dir: string;
  let api: ApiServer;
  let front: ApiFront;
  let directory: ManifestDirectory;
  let applier: ManifestApplier;
  let apps: k8s.AppsV1Api;

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'amesh-applier-owner-'));
    await mkdir(path.join(dir, 'config'));
    await writeFile(path.join(dir, 'config', 'apps.yaml'), `${namespaces('backend')}---${EXTRA}`);
    api = await startApiServer(path.join(dir, 'data'));
    front = await ApiFront.start(api, path.join(dir, 'data'));
    apps = front.kubeconfig.makeApiClient(k8s.AppsV1Api);
    const logs = silentLogs('istiod');
    directory = new ManifestDirectory(path.join(dir, 'config'), logs.scope('directory'));
    applier = new ManifestApplier(directory, front.kubeconfig, logs.scope('applier'));
    await directory.reload();
    assert.deepEqual((await applier.apply()).errors, []);
  });
  after(async () => {
    directory.stop();
    await front.stop();
    await api.stop();
    await rm(dir, { recursive: true, force: true });
  });

  test('a 503 reading an owner by name fails the apply instead of dropping the reference; only a 404 means no owner', async () => {
    const owner = (await apps.readNamespacedDeployment({ name: 'api', namespace: 'backend' })).metadata?.uid;
    const ownerRefs = async (): Promise<string[]> =>
      (
        (await apps.readNamespacedReplicaSet({ name: 'api-5d9c', namespace: 'backend' })).metadata?.ownerReferences ??
        []
      ).map((o) => `${o.kind}/${o.name}/${o.uid}`);
    assert.deepEqual(await ownerRefs(), [`Deployment/api/${owner ?? ''}`]);
    const file = path.join(dir, 'config', 'apps.yaml');
    await writeFile(
      file,
      (await readFile(file, 'utf8')).replace('  name: api-5d9c\n', '  name: api-5d9c\n  labels: {v: "2"}\n'),
    );
    await directory.reload();
    const edited = new Set(['ReplicaSet/backend/api-5d9c']);
    front.fail = (method, p) => (method === 'GET' && p.endsWith('/deployments/api') ? 503 : undefined);
    await assert.rejects(applier.apply(edited), (e: unknown) => (e as { code?: unknown }).code === 503);
    assert.deepEqual(await ownerRefs(), [`Deployment/api/${owner ?? ''}`], 'the reference is still there');
    front.fail = () => undefined;
    assert.deepEqual((await applier.apply(edited)).errors, []);
    const rs = await apps.readNamespacedReplicaSet({ name: 'api-5d9c', namespace: 'backend' });
    assert.equal(rs.metadata?.labels?.['v'], '2', 'the retry applied the edit');
    assert.deepEqual(await ownerRefs(), [`Deployment/api/${owner ?? ''}`]);
  });
});
