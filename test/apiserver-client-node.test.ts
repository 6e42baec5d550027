import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { startApiServer } from './helpers/in-process.js';
import { freePorts } from './helpers/free-port.js';
import { waitFor } from './helpers/mesh-fixture.js';
import type { ApiServer } from '../src/apiserver/api-server.js';

type Informer = k8s.Informer<k8s.V1ConfigMap> & k8s.ObjectCache<k8s.V1ConfigMap>;

/**
 * A client-node informer that is restarted after an error, as every amesh component's informers are: client-node
 * stops an informer whose watch request fails (for example while the server restarts).
 */
function informer(kc: k8s.KubeConfig, ns: string): { inf: Informer; rvs: number[]; stop: () => Promise<void> } {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const inf: Informer = k8s.makeInformer<k8s.V1ConfigMap>(kc, `/api/v1/namespaces/${ns}/configmaps`, () =>
    core.listNamespacedConfigMap({ namespace: ns }),
  );
  const rvs: number[] = [];
  let stopped = false;
  const record = (o: k8s.V1ConfigMap): void => void rvs.push(Number(o.metadata?.resourceVersion));
  inf.on('add', record);
  inf.on('update', record);
  inf.on('delete', record);
  inf.on('error', () => {
    if (!stopped) setTimeout(() => void inf.start().catch(() => undefined), 100);
  });
  return {
    inf,
    rvs,
    stop: async () => {
      stopped = true;
      await inf.stop();
    },
  };
}

const state = (items: readonly k8s.V1ConfigMap[]): string[] =>
  items.map((o) => `${o.metadata?.name ?? ''}@${o.metadata?.resourceVersion ?? ''}`).sort();

describe('@kubernetes/client-node informers against amesh apiserver', () => {
  let dir: string;
  let api: ApiServer;
  let kc: k8s.KubeConfig;
  let core: k8s.CoreV1Api;
  let listen: string;
  const HISTORY = 50;

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'amesh-informer-'));
    const [port] = await freePorts('127.0.0.1', 1);
    listen = `127.0.0.1:${String(port)}`;
    api = await startApiServer(path.join(dir, 'data'), { listen, eventHistory: HISTORY });
    kc = new k8s.KubeConfig();
    kc.loadFromFile(api.kubeconfigPath);
    core = kc.makeApiClient(k8s.CoreV1Api);
    for (const ns of ['churn', 'relist']) await core.createNamespace({ body: { metadata: { name: ns } } });
  });
  after(async () => {
    await api.stop();
    await rm(dir, { recursive: true, force: true });
  });

  test('several informers converge to the final state under concurrent writers, seeing versions in order', async () => {
    const infs = [informer(kc, 'churn'), informer(kc, 'churn'), informer(kc, 'churn')];
    await Promise.all(infs.map((i) => i.inf.start()));
    const writer = async (w: number): Promise<void> => {
      for (let i = 0; i < 30; i++) {
        const name = `cm-${String(w)}-${String(i % 7)}`;
        const existing = await core.readNamespacedConfigMap({ name, namespace: 'churn' }).catch(() => undefined);
        if (existing === undefined)
          await core.createNamespacedConfigMap({
            namespace: 'churn',
            body: { metadata: { name }, data: { i: String(i) } },
          });
        else if (i % 5 === 0) await core.deleteNamespacedConfigMap({ name, namespace: 'churn' });
        else
          await core
            .replaceNamespacedConfigMap({
              name,
              namespace: 'churn',
              body: { metadata: existing.metadata, data: { i: String(i) } },
            })
            .catch(() => undefined);
      }
    };
    await Promise.all([0, 1, 2, 3, 4].map(writer));
    const final = state((await core.listNamespacedConfigMap({ namespace: 'churn' })).items);
    for (const i of infs) {
      await waitFor('informer converges', () => JSON.stringify(state(i.inf.list())) === JSON.stringify(final), 15_000);
      for (let n = 1; n < i.rvs.length; n++)
        assert.ok(
          (i.rvs[n] ?? 0) > (i.rvs[n - 1] ?? 0),
          `events out of order: ${String(i.rvs[n - 1])} then ${String(i.rvs[n])}`,
        );
      await i.stop();
    }
  });

  test('an informer whose version was compacted while the server was down relists after 410 and converges', async () => {
    const i = informer(kc, 'relist');
    await i.inf.start();
    await core.createNamespacedConfigMap({ namespace: 'relist', body: { metadata: { name: 'before' } } });
    await waitFor('informer sees the first object', () => i.inf.list().length === 1);
    await api.stop();
    api = await startApiServer(path.join(dir, 'data'), { listen, eventHistory: HISTORY });
    // More writes than the server keeps: the informer's resourceVersion is now older than the history.
    for (let n = 0; n < HISTORY + 10; n++)
      await core.createNamespacedConfigMap({ namespace: 'churn', body: { metadata: { generateName: 'filler-' } } });
    await core.deleteNamespacedConfigMap({ name: 'before', namespace: 'relist' });
    await core.createNamespacedConfigMap({ namespace: 'relist', body: { metadata: { name: 'after' } } });
    await waitFor(
      'informer relists',
      () => JSON.stringify(i.inf.list().map((o) => o.metadata?.name)) === '["after"]',
      20_000,
    );
    await i.stop();
  });
});
