import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { Registry as MetricsRegistry } from 'prom-client';
import { MeshError, isMeshError } from '../../lib/errors.js';
import { CapturedLogs } from '../../../test/helpers/captured-logs.js';
import { cniPluginAddEvent } from '../plugin/cni-plugin-add-event.js';
import { postCniAddEvent } from '../plugin/plugin-event-client.js';
import { parsePrevResult } from '../plugin/prev-result.js';
import { PluginServer, type PodLookup } from './plugin-server.js';

const POD: V1Pod = { metadata: { name: 'web-0', namespace: 'shop', uid: 'u-1' } };
const EVENT = cniPluginAddEvent(
  '/var/run/netns/cni-1',
  'web-0',
  'shop',
  parsePrevResult({ ips: [{ address: '10.244.1.5/24' }] }).ips,
);

interface Added {
  pod: V1Pod;
  ips: readonly string[];
  netns: string;
}

async function serve(
  lookup: PodLookup,
  add: (a: Added) => Promise<void> = () => Promise.resolve(),
): Promise<{ server: PluginServer; metrics: MetricsRegistry; added: Added[]; done: () => Promise<void> }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'amesh-plugin-server-'));
  const metrics = new MetricsRegistry();
  const added: Added[] = [];
  const server = new PluginServer(
    path.join(dir, 'pluginevent.sock'),
    lookup,
    {
      addPodToMesh: (pod, ips, netns) => {
        added.push({ pod, ips, netns });
        return add({ pod, ips, netns });
      },
    },
    metrics,
    new CapturedLogs('cni-agent').control.scope('plugin'),
  );
  await server.start();
  return {
    server,
    metrics,
    added,
    done: async () => (await server.stop(), await rm(dir, { recursive: true, force: true })),
  };
}

function rawPost(socketPath: string, body: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ socketPath, path: '/cmdadd', method: 'POST', agent: false }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function counted(metrics: MetricsRegistry, code: string): Promise<number> {
  const m = await metrics.getSingleMetric('istio_cni_plugin_requests_total')!.get();
  return m.values.find((v) => v.labels['response_code'] === code)?.value ?? 0;
}

test('/cmdadd from the plugin adds the pod with the IPs and netns of the event and answers 200', async () => {
  const s = await serve(() => POD);
  await postCniAddEvent(s.server.socketPath, EVENT);
  assert.deepEqual(s.added, [{ pod: POD, ips: ['10.244.1.5'], netns: '/var/run/netns/cni-1' }]);
  assert.equal(await counted(s.metrics, '200'), 1);
  await s.done();
});

test('a body that is not the event is 400 and adds nothing', async () => {
  const s = await serve(() => POD);
  const r = await rawPost(s.server.socketPath, '{"PodName":');
  assert.equal(r.status, 400);
  assert.match(r.text, /AGENT_ERR_BAD_EVENT/);
  assert.deepEqual(s.added, []);
  assert.equal(await counted(s.metrics, '400'), 1);
  await s.done();
});

test('a pod the cache does not have yet is looked up again, 10 ms apart', async () => {
  let lookups = 0;
  const s = await serve(() => {
    if (++lookups < 4) throw new MeshError('AGENT_ERR_POD_NOT_FOUND', 'not yet');
    return POD;
  });
  await postCniAddEvent(s.server.socketPath, EVENT);
  assert.equal(lookups, 4);
  assert.equal(s.added.length, 1);
  await s.done();
});

test('a pod never cached fails the ADD after 10 retries (500)', async () => {
  let lookups = 0;
  const s = await serve(() => {
    lookups++;
    throw new MeshError('AGENT_ERR_POD_NOT_FOUND', 'pod shop/web-0 is not in the cache');
  });
  await assert.rejects(
    postCniAddEvent(s.server.socketPath, EVENT),
    (e: unknown) => isMeshError(e, 'CNI_ERR_CAPTURE_FAILED') && /500 AGENT_ERR_POD_NOT_FOUND/.test(e.message),
  );
  assert.equal(lookups, 11);
  assert.equal(await counted(s.metrics, '500'), 1);
  await s.done();
});

test('a pod the selectors no longer select is 500 "unexpectedly not eligible"', async () => {
  const s = await serve(() => undefined);
  await assert.rejects(
    postCniAddEvent(s.server.socketPath, EVENT),
    (e: unknown) =>
      isMeshError(e, 'CNI_ERR_CAPTURE_FAILED') && /AGENT_ERR_NOT_ELIGIBLE.*unexpectedly not eligible/.test(e.message),
  );
  assert.deepEqual(s.added, []);
  await s.done();
});

test("a failed capture is 500 with the agent's reason, which the plugin quotes", async () => {
  const s = await serve(
    () => POD,
    () =>
      Promise.reject(new MeshError('AGENT_ERR_ZTUNNEL', 'ztunnel did not take pod shop/web-0: no ztunnel connection')),
  );
  await assert.rejects(
    postCniAddEvent(s.server.socketPath, EVENT),
    (e: unknown) => isMeshError(e, 'CNI_ERR_CAPTURE_FAILED') && e.message.includes('no ztunnel connection'),
  );
  await s.done();
});

test('a stale socket file left by a previous agent is replaced', async () => {
  const s = await serve(() => POD);
  await s.server.stop();
  await writeFile(s.server.socketPath, 'stale');
  const again = new PluginServer(
    s.server.socketPath,
    () => POD,
    { addPodToMesh: () => Promise.resolve() },
    new MetricsRegistry(),
    new CapturedLogs('cni-agent').control.scope('plugin'),
  );
  await again.start();
  await postCniAddEvent(again.socketPath, EVENT);
  await again.stop();
  await s.done();
});
