import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { kubectlSkip, kubectlWith } from './helpers/kubectl.js';
import { startApiServer } from './helpers/in-process.js';
import type { ApiServer } from '../src/apiserver/api-server.js';

/** A pod, bound to node n1 unless `node` is undefined. */
function podYaml(name: string, node: string | undefined): string {
  return [
    'apiVersion: v1',
    'kind: Pod',
    'metadata:',
    `  name: ${name}`,
    'spec:',
    ...(node === undefined ? [] : [`  nodeName: ${node}`]),
    '  terminationGracePeriodSeconds: 30',
    '  containers:',
    '  - name: app',
    '    image: busybox:1.36',
    '',
  ].join('\n');
}

describe('graceful pod deletion through kubectl', { skip: kubectlSkip }, () => {
  let dir: string;
  let api: ApiServer;
  const { kubectl, ok } = kubectlWith(() => api.kubeconfigPath);

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'amesh-graceful-'));
    api = await startApiServer(path.join(dir, 'data'));
  });
  after(async () => {
    await api?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  async function createPod(name: string, node: string | undefined): Promise<void> {
    const file = path.join(dir, `${name}.yaml`);
    await writeFile(file, podYaml(name, node));
    await ok('create', '-f', file);
  }

  async function meta(name: string): Promise<{ deletionTimestamp?: string; deletionGracePeriodSeconds?: number }> {
    return (JSON.parse(await ok('get', 'pod', name, '-o', 'json')) as { metadata: Record<string, never> }).metadata;
  }

  test('deleting a bound pod keeps it Terminating with deletionTimestamp and the spec grace period', async () => {
    await createPod('bound', 'n1');
    const before = Date.now();
    await ok('delete', 'pod', 'bound', '--wait=false');
    const m = await meta('bound');
    assert.equal(m.deletionGracePeriodSeconds, 30);
    const deadline = Date.parse(m.deletionTimestamp ?? '');
    assert.ok(deadline >= Math.floor(before / 1000) * 1000 + 30_000 && deadline <= Date.now() + 31_000);
    assert.match(await ok('get', 'pod', 'bound', '--no-headers'), /Terminating/);
  });

  test('--grace-period shortens a pending deletion but never lengthens it', async () => {
    await createPod('shorten', 'n1');
    await ok('delete', 'pod', 'shorten', '--wait=false');
    const first = Date.parse((await meta('shorten')).deletionTimestamp ?? '');
    await ok('delete', 'pod', 'shorten', '--wait=false', '--grace-period=10');
    const m = await meta('shorten');
    assert.equal(m.deletionGracePeriodSeconds, 10);
    assert.equal(Date.parse(m.deletionTimestamp ?? ''), first - 20_000);
    await ok('delete', 'pod', 'shorten', '--wait=false', '--grace-period=20');
    assert.deepEqual(await meta('shorten'), m);
  });

  test('--force --grace-period=0 removes a bound pod at once', async () => {
    await createPod('forced', 'n1');
    await ok('delete', 'pod', 'forced', '--wait=false');
    const r = await kubectl('delete', 'pod', 'forced', '--force', '--grace-period=0');
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stderr, /Immediate deletion does not wait for confirmation/);
    const get = await kubectl('get', 'pod', 'forced');
    assert.match(get.stderr, /NotFound|not found/);
  });

  test('an unscheduled pod, or one that Succeeded, is removed at once by a plain delete', async () => {
    await createPod('unscheduled', undefined);
    await ok('delete', 'pod', 'unscheduled');
    assert.match((await kubectl('get', 'pod', 'unscheduled')).stderr, /not found/);
    await createPod('done', 'n1');
    await ok('patch', 'pod', 'done', '--subresource=status', '--type=merge', '-p', '{"status":{"phase":"Succeeded"}}');
    await ok('delete', 'pod', 'done');
    assert.match((await kubectl('get', 'pod', 'done')).stderr, /not found/);
  });
});
