import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { ameshCommand } from '../src/up/amesh-command.js';
import { freePorts } from './helpers/free-port.js';

const dirs: string[] = [];
after(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

/** `amesh apiserver` as its own process; resolves once it logs that it is ready. */
async function startProcess(dataDir: string, listen: string): Promise<ChildProcess> {
  const { cmd, args } = ameshCommand();
  const child = spawn(cmd, [...args, 'apiserver', '--data-dir', dataDir, '--listen', listen], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, LOG_FORMAT: 'json' },
  });
  let out = '';
  await new Promise<void>((resolve, reject) => {
    const onData = (d: Buffer): void => {
      out += d.toString();
      if (out.includes('API server ready')) resolve();
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => reject(new Error(`apiserver exited (${String(code)}) before it was ready:\n${out}`)));
  });
  return child;
}

test('kill -9 during a burst of creates: every acknowledged write is there after restart, and a watch from the last version seen replays every later one', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'amesh-api-durable-'));
  dirs.push(dir);
  const dataDir = path.join(dir, 'data');
  const [port] = await freePorts('127.0.0.1', 1);
  const listen = `127.0.0.1:${String(port)}`;
  let child = await startProcess(dataDir, listen);
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(path.join(dataDir, 'kubeconfig'));
  const core = kc.makeApiClient(k8s.CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: 'burst' } } });

  const acked = new Map<string, number>();
  let checkpoint: number | undefined;
  let killed = false;
  const writer = async (w: number): Promise<void> => {
    for (let i = 0; !killed; i++) {
      try {
        const cm = await core.createNamespacedConfigMap({
          namespace: 'burst',
          body: { metadata: { name: `w${String(w)}-${String(i)}` }, data: { i: String(i) } },
        });
        acked.set(cm.metadata?.name ?? '', Number(cm.metadata?.resourceVersion));
      } catch {
        return;
      }
      if (checkpoint === undefined && acked.size >= 200) checkpoint = Math.max(...acked.values());
      else if (checkpoint !== undefined && acked.size >= 260 && !killed) {
        killed = true;
        child.kill('SIGKILL');
      }
    }
  };
  await Promise.all([0, 1, 2, 3, 4, 5, 6, 7].map(writer));
  await once(child, 'exit').catch(() => undefined);
  assert.ok(checkpoint !== undefined);

  child = await startProcess(dataDir, listen);
  try {
    const items = (await core.listNamespacedConfigMap({ namespace: 'burst' })).items;
    const stored = new Map(items.map((o) => [o.metadata?.name ?? '', Number(o.metadata?.resourceVersion)]));
    for (const [name, rv] of acked) assert.equal(stored.get(name), rv, `acknowledged write ${name}@${String(rv)} lost`);

    const expected = [...stored]
      .filter(([, rv]) => rv > (checkpoint ?? 0))
      .map(([n]) => n)
      .sort();
    const seen: string[] = [];
    const watch = new k8s.Watch(kc);
    let done: () => void = () => undefined;
    const all = new Promise<void>((r) => (done = r));
    const req = await watch.watch(
      '/api/v1/namespaces/burst/configmaps',
      { resourceVersion: String(checkpoint) },
      (type, obj: k8s.V1ConfigMap) => {
        assert.equal(type, 'ADDED');
        seen.push(obj.metadata?.name ?? '');
        if (seen.length === expected.length) done();
      },
      () => undefined,
    );
    await all;
    req.abort();
    assert.deepEqual(seen.sort(), expected);
    const after = await core.createNamespacedConfigMap({
      namespace: 'burst',
      body: { metadata: { name: 'after-restart' } },
    });
    assert.ok(
      Number(after.metadata?.resourceVersion) > Math.max(...stored.values()),
      'resourceVersions keep increasing across restarts',
    );
  } finally {
    child.kill('SIGTERM');
    await once(child, 'exit');
  }
});
