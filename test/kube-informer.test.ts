import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import * as k8s from '@kubernetes/client-node';
import { pino } from 'pino';
import { RestartingInformer } from '../src/kube/informer.js';
import { listJson } from '../src/kube/list-json.js';
import type { ApiServer } from '../src/apiserver/api-server.js';
import { startApiServer } from './helpers/in-process.js';
import { freePorts } from './helpers/free-port.js';

const HOST = '127.82.0.1';
const PATH = '/api/v1/namespaces/inf/configmaps';

/**
 * A RestartingInformer on `listPath` (ConfigMaps of namespace `inf` unless given), with a `change` event after every
 * list request, handler call and log line.
 */
function informer(
  kc: k8s.KubeConfig,
  listPath = PATH,
): {
  inf: RestartingInformer<k8s.V1ConfigMap>;
  changed: EventEmitter;
  logs: string[];
  lists: () => number;
  names: () => string[];
} {
  const changed = new EventEmitter();
  const logs: string[] = [];
  const emit = (): void => void changed.emit('change');
  const log = pino(
    { level: 'info' },
    new Writable({
      write: (c: Buffer, _e, cb) => {
        logs.push(String(c));
        emit();
        cb();
      },
    }),
  );
  let lists = 0;
  const inf = new RestartingInformer<k8s.V1ConfigMap>(
    kc,
    listPath,
    () => {
      lists++;
      emit();
      return listJson(kc, listPath);
    },
    { add: emit, update: emit, delete: emit },
    log,
  );
  return {
    inf,
    changed,
    logs,
    lists: () => lists,
    names: () =>
      inf
        .list()
        .map((o) => o.metadata?.name ?? '')
        .sort(),
  };
}

/** Resolves when `check` holds, tested now and after every `change`; the test's timeout bounds it. */
async function until(changed: EventEmitter, check: () => boolean): Promise<void> {
  while (!check()) await new Promise((r) => changed.once('change', r));
}

describe('RestartingInformer against amesh apiserver', () => {
  let dir: string;
  let api: ApiServer;
  let kc: k8s.KubeConfig;
  let core: k8s.CoreV1Api;
  let listen: string;

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'amesh-restarting-informer-'));
    const [port] = await freePorts(HOST, 1);
    listen = `${HOST}:${String(port)}`;
    api = await startApiServer(path.join(dir, 'data'), { listen });
    kc = new k8s.KubeConfig();
    kc.loadFromFile(api.kubeconfigPath);
    core = kc.makeApiClient(k8s.CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: 'inf' } } });
  });
  after(async () => {
    await api.stop();
    await rm(dir, { recursive: true, force: true });
  });

  test('synced resolves after the first list reached the handlers, and listed objects have the shape watched ones have', async () => {
    await core.createNamespacedConfigMap({
      namespace: 'inf',
      body: { metadata: { name: 'listed' }, data: { a: '1' } },
    });
    const i = informer(kc);
    i.inf.start();
    await i.inf.synced;
    assert.deepEqual(i.names(), ['listed']);
    await core.createNamespacedConfigMap({ namespace: 'inf', body: { metadata: { name: 'watched' } } });
    await until(i.changed, () => i.names().includes('watched'));
    const listed = i.inf.get('listed', 'inf')!;
    const watched = i.inf.get('watched', 'inf')!;
    // JSON as the API sends it: timestamps are strings in both (a typed list call would make them Dates).
    assert.equal(typeof listed.metadata?.creationTimestamp, 'string');
    assert.equal(typeof watched.metadata?.creationTimestamp, 'string');
    await i.inf.stop();
    await core.deleteNamespacedConfigMap({ name: 'listed', namespace: 'inf' });
    await core.deleteNamespacedConfigMap({ name: 'watched', namespace: 'inf' });
  });

  test('an informer of a resource the API does not serve settles as unserved, and lists its objects once a CRD serves it', async () => {
    const i = informer(kc, '/apis/informer.amesh.test/v1/namespaces/inf/widgets');
    let synced = false;
    void i.inf.synced.then(() => (synced = true));
    i.inf.start();
    await i.inf.syncedOrUnserved;
    assert.equal(synced, false);
    await until(i.changed, () => i.lists() >= 3);
    await kc.makeApiClient(k8s.ApiextensionsV1Api).createCustomResourceDefinition({
      body: {
        metadata: { name: 'widgets.informer.amesh.test' },
        spec: {
          group: 'informer.amesh.test',
          scope: 'Namespaced',
          names: { kind: 'Widget', plural: 'widgets', singular: 'widget', listKind: 'WidgetList' },
          versions: [
            {
              name: 'v1',
              served: true,
              storage: true,
              schema: { openAPIV3Schema: { type: 'object' } },
            },
          ],
        },
      },
    });
    await kc.makeApiClient(k8s.CustomObjectsApi).createNamespacedCustomObject({
      group: 'informer.amesh.test',
      version: 'v1',
      namespace: 'inf',
      plural: 'widgets',
      body: { apiVersion: 'informer.amesh.test/v1', kind: 'Widget', metadata: { name: 'w' } },
    });
    await until(i.changed, () => i.names().includes('w'));
    await i.inf.synced;
    await i.inf.stop();
    assert.deepEqual(
      i.logs.map((l) => (JSON.parse(l) as { msg: string }).msg),
      ['not served by the API (no CRD?); looking for it again'],
      'said once, not warned of at every attempt as a failed watch',
    );
    await kc.makeApiClient(k8s.ApiextensionsV1Api).deleteCustomResourceDefinition({
      name: 'widgets.informer.amesh.test',
    });
  });

  test('an informer started while the API server is down syncs once it is up', async () => {
    await api.stop();
    const i = informer(kc);
    i.inf.start();
    let synced = false;
    void i.inf.synced.then(() => (synced = true));
    await until(i.changed, () => i.logs.some((l) => l.includes('watch failed; restarting')));
    assert.equal(synced, false);
    api = await startApiServer(path.join(dir, 'data'), { listen });
    await i.inf.synced;
    await i.inf.stop();
  });

  test('an informer stopped while its first list is in flight delivers no event afterwards', async () => {
    const stopped = informer(kc);
    let late = 0;
    stopped.changed.on('change', () => void (late += stopped.inf.list().length));
    stopped.inf.start();
    await stopped.inf.stop();
    // A barrier: an informer that sees both writes in order has seen events the stopped one would have had by then.
    const barrier = informer(kc);
    barrier.inf.start();
    await barrier.inf.synced;
    for (const name of ['late-1', 'late-2']) {
      await core.createNamespacedConfigMap({ namespace: 'inf', body: { metadata: { name } } });
      await until(barrier.changed, () => barrier.names().includes(name));
    }
    assert.equal(late, 0);
    assert.deepEqual(stopped.inf.list(), []);
    await barrier.inf.stop();
    for (const name of ['late-1', 'late-2']) await core.deleteNamespacedConfigMap({ name, namespace: 'inf' });
  });

  test('after the API server restarts, the informer resumes and converges on what changed while it was down', async () => {
    for (const name of ['stays', 'edited', 'deleted'])
      await core.createNamespacedConfigMap({ namespace: 'inf', body: { metadata: { name }, data: { v: '1' } } });
    const i = informer(kc);
    i.inf.start();
    await i.inf.synced;
    assert.deepEqual(i.names(), ['deleted', 'edited', 'stays']);
    await api.stop();
    // Changes the informer cannot see: made against the same data directory by another server instance.
    const offline = await startApiServer(path.join(dir, 'data'));
    const okc = new k8s.KubeConfig();
    okc.loadFromFile(offline.kubeconfigPath);
    const ocore = okc.makeApiClient(k8s.CoreV1Api);
    await ocore.patchNamespacedConfigMap(
      { name: 'edited', namespace: 'inf', body: { data: { v: '2' } } },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
    await ocore.deleteNamespacedConfigMap({ name: 'deleted', namespace: 'inf' });
    await ocore.createNamespacedConfigMap({ namespace: 'inf', body: { metadata: { name: 'created' } } });
    await offline.stop();
    api = await startApiServer(path.join(dir, 'data'), { listen });
    await until(
      i.changed,
      () =>
        JSON.stringify(i.names()) === '["created","edited","stays"]' && i.inf.get('edited', 'inf')?.data?.['v'] === '2',
    );
    assert.ok(
      i.logs.some((l) => l.includes('watch failed; restarting')),
      'the informer saw the server go away',
    );
    await i.inf.stop();
  });
});
