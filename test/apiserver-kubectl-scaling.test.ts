/**
 * The scaling kinds against kubectl: `kubectl scale` through the scale subresource of Deployments, StatefulSets
 * and ReplicaSets (a merge patch, or a read and an update with --current-replicas), PodDisruptionBudgets from
 * `kubectl create pdb` (protobuf) and HorizontalPodAutoscalers from `kubectl apply`, stored with their defaults,
 * printed as kubectl prints them, their status written only through the status subresource.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { stringify } from 'yaml';
import { kubectlSkip, kubectlWith } from './helpers/kubectl.js';
import { startApiServer } from './helpers/in-process.js';
import type { ApiServer } from '../src/apiserver/api-server.js';

describe('scaling kinds with kubectl against amesh apiserver', { skip: kubectlSkip }, () => {
  let dir: string;
  let api: ApiServer;
  const { kubectl, ok } = kubectlWith(() => api.kubeconfigPath);
  const json = async (...args: string[]): Promise<Record<string, Record<string, unknown>>> =>
    JSON.parse(await ok('get', ...args, '-o', 'json')) as Record<string, Record<string, unknown>>;
  const apply = async (name: string, objects: unknown[]): Promise<string> => {
    const file = path.join(dir, `${name}.yaml`);
    await writeFile(file, objects.map((o) => stringify(o)).join('---\n'));
    return ok('apply', '-f', file);
  };

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'amesh-kubectl-scaling-'));
    api = await startApiServer(path.join(dir, 'data'));
    await ok('create', 'namespace', 'shop');
    await ok('create', 'deployment', 'web', '--image=nginx', '--replicas=2', '-n', 'shop');
  });
  after(async () => {
    await api.stop();
    await rm(dir, { recursive: true, force: true });
  });

  test('kubectl scale writes the replicas through deployments/scale, and the Deployment counts a generation', async () => {
    assert.match(await ok('scale', 'deployment', 'web', '--replicas=5', '-n', 'shop'), /deployment\.apps\/web scaled/);
    const d = await json('deployment', 'web', '-n', 'shop');
    assert.equal(d.spec?.replicas, 5);
    assert.equal(d.metadata?.generation, 2);
    const scale = JSON.parse(await ok('get', '--raw', '/apis/apps/v1/namespaces/shop/deployments/web/scale')) as {
      apiVersion: string;
      kind: string;
      spec: { replicas: number };
      status: { selector: string };
    };
    assert.deepEqual(
      [scale.apiVersion, scale.kind, scale.spec.replicas, scale.status.selector],
      ['autoscaling/v1', 'Scale', 5, 'app=web'],
    );
  });

  test('with --current-replicas kubectl reads the Scale and updates it, and a wrong current count is refused', async () => {
    await ok('scale', 'deployment', 'web', '--replicas=3', '--current-replicas=5', '-n', 'shop');
    assert.equal((await json('deployment', 'web', '-n', 'shop')).spec?.replicas, 3);
    const stale = await kubectl('scale', 'deployment', 'web', '--replicas=1', '--current-replicas=5', '-n', 'shop');
    assert.notEqual(stale.status, 0);
    assert.match(stale.stderr, /Expected replicas to be 5, was 3/);
  });

  test('StatefulSets and ReplicaSets scale the same way; a negative count is 422 with Scale validation', async () => {
    const template = {
      metadata: { labels: { app: 'db' } },
      spec: { containers: [{ name: 'db', image: 'postgres' }] },
    };
    await apply('workloads', [
      {
        apiVersion: 'apps/v1',
        kind: 'StatefulSet',
        metadata: { name: 'db', namespace: 'shop' },
        spec: { serviceName: 'db', replicas: 1, selector: { matchLabels: { app: 'db' } }, template },
      },
      {
        apiVersion: 'apps/v1',
        kind: 'ReplicaSet',
        metadata: { name: 'cache', namespace: 'shop' },
        spec: {
          replicas: 1,
          selector: { matchLabels: { app: 'cache' } },
          template: { ...template, metadata: { labels: { app: 'cache' } } },
        },
      },
    ]);
    await ok('scale', 'statefulset', 'db', '--replicas=3', '-n', 'shop');
    await ok('scale', 'replicaset', 'cache', '--replicas=0', '-n', 'shop');
    assert.equal((await json('statefulset', 'db', '-n', 'shop')).spec?.replicas, 3);
    assert.equal((await json('replicaset', 'cache', '-n', 'shop')).spec?.replicas, 0);
    const negative = await kubectl(
      'patch',
      'deployment',
      'web',
      '-n',
      'shop',
      '--subresource=scale',
      '--type=merge',
      '-p',
      '{"spec":{"replicas":-1}}',
    );
    assert.notEqual(negative.status, 0);
    assert.match(
      negative.stderr,
      /The Scale "web" is invalid: spec\.replicas: Invalid value: -1: must be greater than or equal to 0/,
    );
  });

  test('kubectl create pdb stores a PodDisruptionBudget with its empty status; both bounds are refused; get prints its columns', async () => {
    assert.match(
      await ok('create', 'pdb', 'web', '--selector=app=web', '--min-available=1', '-n', 'shop'),
      /poddisruptionbudget\.policy\/web created/,
    );
    const pdb = await json('pdb', 'web', '-n', 'shop');
    assert.deepEqual(pdb.spec, { minAvailable: 1, selector: { matchLabels: { app: 'web' } } });
    assert.deepEqual(pdb.status, { disruptionsAllowed: 0, currentHealthy: 0, desiredHealthy: 0, expectedPods: 0 });
    const both = await kubectl(
      'create',
      'pdb',
      'both',
      '--selector=app=web',
      '--min-available=1',
      '--max-unavailable=1',
      '-n',
      'shop',
    );
    assert.notEqual(both.status, 0);
    assert.match(both.stderr, /min-available and max-unavailable cannot be both specified|cannot be both set/);
    const table = await ok('get', 'pdb', '-n', 'shop');
    assert.match(table.split('\n')[0] ?? '', /^NAME\s+MIN AVAILABLE\s+MAX UNAVAILABLE\s+ALLOWED DISRUPTIONS\s+AGE$/);
    assert.match(table, /^web\s+1\s+N\/A\s+0\s+/m);
    await ok(
      'patch',
      'pdb',
      'web',
      '-n',
      'shop',
      '--subresource=status',
      '--type=merge',
      '-p',
      '{"status":{"disruptionsAllowed":1,"expectedPods":2}}',
    );
    assert.match(await ok('get', 'pdb', '-n', 'shop'), /^web\s+1\s+N\/A\s+1\s+/m);
  });

  test('an autoscaling/v2 HPA is stored with its defaults and printed with its target; an invalid one gets validation', async () => {
    await apply('hpa', [
      {
        apiVersion: 'autoscaling/v2',
        kind: 'HorizontalPodAutoscaler',
        metadata: { name: 'web', namespace: 'shop' },
        spec: { scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web' }, maxReplicas: 4 },
      },
    ]);
    const hpa = await json('hpa', 'web', '-n', 'shop');
    assert.equal(hpa.spec?.minReplicas, 1);
    assert.deepEqual(hpa.spec?.metrics, [
      { type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 80 } } },
    ]);
    const table = await ok('get', 'hpa', '-n', 'shop');
    assert.match(table.split('\n')[0] ?? '', /^NAME\s+REFERENCE\s+TARGETS\s+MINPODS\s+MAXPODS\s+REPLICAS\s+AGE$/);
    assert.match(table, /^web\s+Deployment\/web\s+cpu: <unknown>\/80%\s+1\s+4\s+0\s+/m);
    const bad = await kubectl(
      'patch',
      'hpa',
      'web',
      '-n',
      'shop',
      '--type=merge',
      '-p',
      '{"spec":{"minReplicas":6,"metrics":[{"type":"Pods"}]}}',
    );
    assert.notEqual(bad.status, 0);
    assert.match(
      bad.stderr,
      /The HorizontalPodAutoscaler "web" is invalid: \n\* spec\.maxReplicas: Invalid value: 4: must be greater than or equal to `minReplicas`\n\* spec\.metrics\[0\]\.pods: Required value: must populate information for the given metric source/,
    );
  });
});
