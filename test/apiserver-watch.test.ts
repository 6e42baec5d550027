import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import https from 'node:https';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startApiServer } from './helpers/in-process.js';
import type { ApiServer } from '../src/apiserver/api-server.js';

interface Event {
  type: string;
  object: {
    metadata: { name?: string; resourceVersion?: string; annotations?: Record<string, string> };
    code?: number;
    reason?: string;
  };
}

describe('amesh apiserver watch streams', () => {
  let dir: string;
  let api: ApiServer;
  let token: string;

  const request = (method: string, p: string, body?: unknown): Promise<{ status: number; text: string }> =>
    new Promise((resolve, reject) => {
      const data = body === undefined ? undefined : JSON.stringify(body);
      const req = https.request(
        {
          host: '127.0.0.1',
          port: api.port,
          method,
          path: p,
          ca: api.caCertPem,
          servername: 'localhost',
          headers: {
            authorization: `Bearer ${token}`,
            ...(data === undefined
              ? {}
              : { 'content-type': method === 'PATCH' ? 'application/merge-patch+json' : 'application/json' }),
          },
        },
        (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
        },
      );
      req.on('error', reject);
      req.end(data);
    });
  const rvOf = (text: string): string =>
    (JSON.parse(text) as { metadata: { resourceVersion: string } }).metadata.resourceVersion;
  /** A whole watch stream, read until the server ends it. */
  const watchAll = async (query: string): Promise<{ status: number; events: Event[] }> => {
    const r = await request('GET', `/api/v1/namespaces/w/configmaps?watch=true&${query}`);
    return {
      status: r.status,
      events: r.text
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as Event),
    };
  };

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'amesh-watch-'));
    api = await startApiServer(path.join(dir, 'data'), { eventHistory: 20 });
    token = /token: (\S+)/.exec(await readFile(api.kubeconfigPath, 'utf8'))?.[1] ?? '';
    assert.equal((await request('POST', '/api/v1/namespaces', { metadata: { name: 'w' } })).status, 201);
  });
  after(async () => {
    await api.stop();
    await rm(dir, { recursive: true, force: true });
  });

  test('lifting the last finalizer of an object being deleted ends it with one DELETED event, no MODIFIED before it', async () => {
    await request('POST', '/api/v1/namespaces/w/configmaps', {
      metadata: { name: 'fin', finalizers: ['example.com/hold'] },
    });
    const marked = await request('DELETE', '/api/v1/namespaces/w/configmaps/fin');
    assert.equal(
      (await request('PATCH', '/api/v1/namespaces/w/configmaps/fin', { metadata: { finalizers: null } })).status,
      200,
    );
    const { events } = await watchAll(
      `resourceVersion=${rvOf(marked.text)}&fieldSelector=metadata.name%3Dfin&timeoutSeconds=1`,
    );
    assert.deepEqual(
      events.map((e) => e.type),
      ['DELETED'],
    );
    assert.equal((await request('GET', '/api/v1/namespaces/w/configmaps/fin')).status, 404);
  });

  test('without a resourceVersion the stream starts with the current objects as ADDED, then ends at timeoutSeconds', async () => {
    await request('POST', '/api/v1/namespaces/w/configmaps', { metadata: { name: 'first' } });
    const { status, events } = await watchAll('timeoutSeconds=1');
    assert.equal(status, 200);
    assert.deepEqual(
      events.map((e) => [e.type, e.object.metadata.name]),
      [['ADDED', 'first']],
    );
  });

  test('a watcher allowing bookmarks gets one with its newest version before the timeout ends the stream', async () => {
    const created = await request('POST', '/api/v1/namespaces/w/configmaps', { metadata: { name: 'second' } });
    const { events } = await watchAll(
      `resourceVersion=${rvOf(created.text)}&allowWatchBookmarks=true&timeoutSeconds=1`,
    );
    assert.equal(events.at(-1)?.type, 'BOOKMARK');
    assert.equal(events.at(-1)?.object.metadata.resourceVersion, rvOf(created.text));
  });

  test('a label-selected watch sees an object that starts matching as ADDED and one that stops matching as DELETED', async () => {
    const created = await request('POST', '/api/v1/namespaces/w/configmaps', { metadata: { name: 'sel' } });
    await request('PATCH', '/api/v1/namespaces/w/configmaps/sel', { metadata: { labels: { app: 'x' } } });
    await request('PATCH', '/api/v1/namespaces/w/configmaps/sel', { data: { k: 'v' } });
    await request('PATCH', '/api/v1/namespaces/w/configmaps/sel', { metadata: { labels: { app: 'y' } } });
    const { events } = await watchAll(`resourceVersion=${rvOf(created.text)}&labelSelector=app%3Dx&timeoutSeconds=1`);
    assert.deepEqual(
      events.map((e) => e.type),
      ['ADDED', 'MODIFIED', 'DELETED'],
    );
  });

  test('a resourceVersion older than the kept history gets one ERROR event with a 410 Expired Status', async () => {
    const first = await request('POST', '/api/v1/namespaces/w/configmaps', { metadata: { name: 'old' } });
    for (let i = 0; i < 25; i++)
      await request('PATCH', '/api/v1/namespaces/w/configmaps/old', { data: { i: String(i) } });
    const { status, events } = await watchAll(`resourceVersion=${rvOf(first.text)}`);
    assert.equal(status, 200);
    assert.equal(events.length, 1);
    assert.equal(events[0]?.type, 'ERROR');
    assert.equal(events[0]?.object.code, 410);
    assert.equal(events[0]?.object.reason, 'Expired');
  });

  test('a watch on one named object sees only that object', async () => {
    const a = await request('POST', '/api/v1/namespaces/w/configmaps', { metadata: { name: 'named-a' } });
    await request('POST', '/api/v1/namespaces/w/configmaps', { metadata: { name: 'named-b' } });
    await request('PATCH', '/api/v1/namespaces/w/configmaps/named-b', { data: { k: 'b' } });
    await request('PATCH', '/api/v1/namespaces/w/configmaps/named-a', { data: { k: 'a' } });
    const r = await request(
      'GET',
      `/api/v1/namespaces/w/configmaps/named-a?watch=true&resourceVersion=${rvOf(a.text)}&timeoutSeconds=1`,
    );
    const events = r.text
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as Event);
    assert.deepEqual(
      events.map((e) => [e.type, e.object.metadata.name]),
      [['MODIFIED', 'named-a']],
    );
  });

  test("a selected watch's bookmark carries the store's progress, not only its own events' versions", async () => {
    const start = await request('POST', '/api/v1/namespaces/w/configmaps', { metadata: { name: 'progress' } });
    const later = await request('PATCH', '/api/v1/namespaces/w/configmaps/progress', { data: { k: 'v' } });
    const { events } = await watchAll(
      `resourceVersion=${rvOf(start.text)}&labelSelector=nothing%3Dmatches&allowWatchBookmarks=true&timeoutSeconds=1`,
    );
    assert.deepEqual(
      events.map((e) => e.type),
      ['BOOKMARK'],
    );
    assert.ok(Number(events[0]?.object.metadata.resourceVersion) >= Number(rvOf(later.text)));
  });

  test('sendInitialEvents streams the current state and ends it with the initial-events-end bookmark', async () => {
    const { status, events } = await watchAll(
      'sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1&fieldSelector=metadata.name%3Dfirst',
    );
    assert.equal(status, 200);
    assert.deepEqual(
      events.slice(0, 2).map((e) => e.type),
      ['ADDED', 'BOOKMARK'],
    );
    assert.equal(events[1]?.object.metadata.annotations?.['k8s.io/initial-events-end'], 'true');
    assert.equal((await watchAll('sendInitialEvents=true&allowWatchBookmarks=true')).status, 422);
  });

  test('a resourceVersion from the future is a 504 before the stream starts, as the watch cache answers after its wait', async () => {
    assert.equal((await watchAll('resourceVersion=999999999')).status, 504);
  });

  test('kubectl get -w asks for Tables: each event is a Table row, and only the first carries the columns', async () => {
    const first = await request('POST', '/api/v1/namespaces/w/configmaps', { metadata: { name: 'tabled' } });
    await request('PATCH', '/api/v1/namespaces/w/configmaps/tabled', { data: { k: 'v' } });
    await request('PATCH', '/api/v1/namespaces/w/configmaps/tabled', { data: { k: 'w' } });
    const text = await new Promise<string>((resolve, reject) => {
      const req = https.request(
        {
          host: '127.0.0.1',
          port: api.port,
          path: `/api/v1/namespaces/w/configmaps?watch=true&resourceVersion=${rvOf(first.text)}&timeoutSeconds=1`,
          ca: api.caCertPem,
          servername: 'localhost',
          headers: {
            authorization: `Bearer ${token}`,
            accept: 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json',
          },
        },
        (res) => {
          let t = '';
          res.on('data', (c: Buffer) => (t += c.toString()));
          res.on('end', () => resolve(t));
        },
      );
      req.on('error', reject);
      req.end();
    });
    const tables = text
      .split('\n')
      .filter((l) => l !== '')
      .map(
        (l) =>
          (
            JSON.parse(l) as {
              object: { kind: string; columnDefinitions?: { name: string }[]; rows: { cells: unknown[] }[] };
            }
          ).object,
      );
    assert.deepEqual(
      tables.map((t) => t.kind),
      ['Table', 'Table'],
    );
    assert.deepEqual(
      tables[0]?.columnDefinitions?.map((c) => c.name),
      ['Name', 'Data', 'Age'],
    );
    assert.equal(tables[1]?.columnDefinitions, undefined);
    assert.equal(tables[1]?.rows[0]?.cells[1], 1);
  });

  test('an unknown propagationPolicy is refused with 422, and the object stays', async () => {
    await request('POST', '/api/v1/namespaces/w/configmaps', { metadata: { name: 'kept' } });
    const r = await request('DELETE', '/api/v1/namespaces/w/configmaps/kept?propagationPolicy=Sideways');
    assert.equal(r.status, 422);
    assert.match(r.text, /propagationPolicy: Unsupported value: \\"Sideways\\"/);
    assert.equal((await request('GET', '/api/v1/namespaces/w/configmaps/kept')).status, 200);
  });

  test('a bad resourceVersion or selector is a 400 before the stream starts', async () => {
    assert.equal((await watchAll('resourceVersion=abc')).status, 400);
    assert.equal((await watchAll('labelSelector=%3D%3D%3D')).status, 400);
    assert.equal((await watchAll('fieldSelector=spec.bogus%3Dx')).status, 400);
  });
});
