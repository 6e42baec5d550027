import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { startApiServer } from './helpers/in-process.js';
import { waitFor } from './helpers/mesh-fixture.js';
import type { ApiServer } from '../src/apiserver/api-server.js';

const gone = async (read: () => Promise<unknown>): Promise<boolean> =>
  read().then(
    () => false,
    (e: unknown) => (e as { code?: number }).code === 404,
  );

describe('amesh apiserver garbage collection and namespace deletion', () => {
  let dir: string;
  let api: ApiServer;
  let core: k8s.CoreV1Api;
  let apps: k8s.AppsV1Api;
  let kc: k8s.KubeConfig;

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'amesh-gc-'));
    api = await startApiServer(path.join(dir, 'data'));
    kc = new k8s.KubeConfig();
    kc.loadFromFile(api.kubeconfigPath);
    core = kc.makeApiClient(k8s.CoreV1Api);
    apps = kc.makeApiClient(k8s.AppsV1Api);
  });
  after(async () => {
    await api.stop();
    await rm(dir, { recursive: true, force: true });
  });

  test('a namespace stays Terminating while content held by a finalizer remains, and goes once it is released', async () => {
    await core.createNamespace({ body: { metadata: { name: 'held' } } });
    await core.createNamespacedConfigMap({
      namespace: 'held',
      body: { metadata: { name: 'keep', finalizers: ['example.com/hold'] } },
    });
    await core.createNamespacedConfigMap({ namespace: 'held', body: { metadata: { name: 'plain' } } });
    await core.deleteNamespace({ name: 'held' });
    await waitFor(
      'plain content deleted',
      () => gone(() => core.readNamespacedConfigMap({ name: 'plain', namespace: 'held' })),
      10_000,
    );
    assert.equal((await core.readNamespace({ name: 'held' })).status?.phase, 'Terminating');
    await core.patchNamespacedConfigMap({
      name: 'keep',
      namespace: 'held',
      body: [{ op: 'remove', path: '/metadata/finalizers' }],
    });
    await waitFor('namespace removed', () => gone(() => core.readNamespace({ name: 'held' })), 10_000);
    assert.ok(await gone(() => core.readNamespacedConfigMap({ name: 'keep', namespace: 'held' })));
  });

  test('dependents of a deleted owner are collected, orphaned ones lose the reference, and an owner of a kind not served is never taken as gone', async () => {
    await core.createNamespace({ body: { metadata: { name: 'owned' } } });
    const template = { metadata: { labels: { app: 'a' } }, spec: { containers: [{ name: 'c', image: 'i' }] } };
    const owner = async (name: string): Promise<k8s.V1OwnerReference> => {
      const d = await apps.createNamespacedDeployment({
        namespace: 'owned',
        body: { metadata: { name }, spec: { selector: { matchLabels: { app: 'a' } }, template } },
      });
      return { apiVersion: 'apps/v1', kind: 'Deployment', name, uid: d.metadata?.uid ?? '', controller: true };
    };
    const collected = await owner('collected');
    const orphaning = await owner('orphaning');
    const rs = (name: string, ref: k8s.V1OwnerReference): Promise<k8s.V1ReplicaSet> =>
      apps.createNamespacedReplicaSet({
        namespace: 'owned',
        body: {
          metadata: { name, ownerReferences: [ref] },
          spec: { selector: { matchLabels: { app: 'a' } }, template },
        },
      });
    await rs('rs-collected', collected);
    await rs('rs-orphaned', orphaning);
    await core.createNamespacedPod({
      namespace: 'owned',
      body: {
        metadata: {
          name: 'rollout-pod',
          ownerReferences: [
            {
              apiVersion: 'argoproj.io/v1alpha1',
              kind: 'Rollout',
              name: 'web',
              uid: '4b1e0c1e-0000-4000-8000-000000000001',
              controller: true,
            },
          ],
        },
        spec: { containers: [{ name: 'c', image: 'i' }] },
      },
    });
    await apps.deleteNamespacedDeployment({ name: 'collected', namespace: 'owned' });
    await apps.deleteNamespacedDeployment({ name: 'orphaning', namespace: 'owned', propagationPolicy: 'Orphan' });
    await waitFor(
      'dependent collected',
      () => gone(() => apps.readNamespacedReplicaSet({ name: 'rs-collected', namespace: 'owned' })),
      10_000,
    );
    const orphan = await apps.readNamespacedReplicaSet({ name: 'rs-orphaned', namespace: 'owned' });
    assert.equal(orphan.metadata?.ownerReferences, undefined);
    assert.equal(
      (await core.readNamespacedPod({ name: 'rollout-pod', namespace: 'owned' })).metadata?.name,
      'rollout-pod',
    );
  });

  test('a Job deleted without a propagationPolicy orphans its pods, as batch/v1 does; with Background it takes them along', async () => {
    const batch = kc.makeApiClient(k8s.BatchV1Api);
    await core.createNamespace({ body: { metadata: { name: 'jobs' } } });
    const template = { spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'i' }] } };
    const jobWithPod = async (name: string): Promise<void> => {
      const job = await batch.createNamespacedJob({
        namespace: 'jobs',
        body: { metadata: { name }, spec: { template } },
      });
      await core.createNamespacedPod({
        namespace: 'jobs',
        body: {
          metadata: {
            name: `${name}-pod`,
            ownerReferences: [
              { apiVersion: 'batch/v1', kind: 'Job', name, uid: job.metadata?.uid ?? '', controller: true },
            ],
          },
          spec: template.spec,
        },
      });
    };
    await jobWithPod('legacy');
    await jobWithPod('background');
    await batch.deleteNamespacedJob({ name: 'legacy', namespace: 'jobs' });
    await batch.deleteNamespacedJob({ name: 'background', namespace: 'jobs', propagationPolicy: 'Background' });
    await waitFor(
      "the Background job's pod collected",
      () => gone(() => core.readNamespacedPod({ name: 'background-pod', namespace: 'jobs' })),
      10_000,
    );
    const kept = await core.readNamespacedPod({ name: 'legacy-pod', namespace: 'jobs' });
    assert.equal(kept.metadata?.ownerReferences, undefined, 'orphaned: its reference to the Job is gone');
  });

  test('a Foreground delete keeps the owner (foregroundDeletion finalizer) until the dependents that block it are gone', async () => {
    await core.createNamespace({ body: { metadata: { name: 'fg' } } });
    const template = { metadata: { labels: { app: 'a' } }, spec: { containers: [{ name: 'c', image: 'i' }] } };
    const d = await apps.createNamespacedDeployment({
      namespace: 'fg',
      body: { metadata: { name: 'web' }, spec: { selector: { matchLabels: { app: 'a' } }, template } },
    });
    const block = (kind: string, name: string, uid: string | undefined): k8s.V1OwnerReference => ({
      apiVersion: 'apps/v1',
      kind,
      name,
      uid: uid ?? '',
      controller: true,
      blockOwnerDeletion: true,
    });
    const rs = await apps.createNamespacedReplicaSet({
      namespace: 'fg',
      body: {
        metadata: { name: 'web-1', ownerReferences: [block('Deployment', 'web', d.metadata?.uid)] },
        spec: { selector: { matchLabels: { app: 'a' } }, template },
      },
    });
    await core.createNamespacedPod({
      namespace: 'fg',
      body: {
        metadata: {
          name: 'web-1-a',
          finalizers: ['example.com/hold'],
          ownerReferences: [block('ReplicaSet', 'web-1', rs.metadata?.uid)],
        },
        spec: template.spec,
      },
    });

    await apps.deleteNamespacedDeployment({ name: 'web', namespace: 'fg', propagationPolicy: 'Foreground' });
    const held = await apps.readNamespacedDeployment({ name: 'web', namespace: 'fg' });
    assert.ok(held.metadata?.deletionTimestamp !== undefined);
    assert.deepEqual(held.metadata?.finalizers, ['foregroundDeletion']);
    await waitFor(
      'the pod marked for deletion',
      async () =>
        (await core.readNamespacedPod({ name: 'web-1-a', namespace: 'fg' })).metadata?.deletionTimestamp !== undefined,
      10_000,
    );
    assert.ok(
      (await apps.readNamespacedReplicaSet({ name: 'web-1', namespace: 'fg' })).metadata?.deletionTimestamp !==
        undefined,
      'the ReplicaSet waits for its pod',
    );
    assert.ok(
      !(await gone(() => apps.readNamespacedDeployment({ name: 'web', namespace: 'fg' }))),
      'the Deployment waits for its ReplicaSet',
    );

    await core.patchNamespacedPod({
      name: 'web-1-a',
      namespace: 'fg',
      body: [{ op: 'remove', path: '/metadata/finalizers' }],
    });
    await waitFor(
      'the whole tree gone, owner last',
      () => gone(() => apps.readNamespacedDeployment({ name: 'web', namespace: 'fg' })),
      10_000,
    );
    assert.ok(await gone(() => apps.readNamespacedReplicaSet({ name: 'web-1', namespace: 'fg' })));
    assert.ok(await gone(() => core.readNamespacedPod({ name: 'web-1-a', namespace: 'fg' })));
  });

  test('a server-side dry run of a Service does not keep the ClusterIP it showed', async () => {
    await core.createNamespace({ body: { metadata: { name: 'ips' } } });
    const body = { metadata: { name: 'fixed' }, spec: { clusterIP: '10.96.50.50', ports: [{ port: 80 }] } };
    const dry = await core.createNamespacedService({ namespace: 'ips', body, dryRun: 'All' });
    assert.equal(dry.spec?.clusterIP, '10.96.50.50');
    assert.equal((await core.createNamespacedService({ namespace: 'ips', body })).spec?.clusterIP, '10.96.50.50');
  });
});
