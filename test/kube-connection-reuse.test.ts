import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHook } from 'node:async_hooks';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { loadKubeConfig } from '../src/kube/kube-config.js';
import type { ApiServer } from '../src/apiserver/api-server.js';
import { startApiServer } from './helpers/in-process.js';
import { freePorts } from './helpers/free-port.js';

/**
 * TCP connections this process opens to `port` while `fn` runs. Each outgoing connect is a TCPCONNECTWRAP resource,
 * given its destination after it is created; other test files in the same process connect elsewhere.
 */
async function socketsOpened(port: number, fn: () => Promise<void>): Promise<number> {
  const connects: { port?: unknown }[] = [];
  const hook = createHook({
    init: (_id, type, _trigger, resource) => {
      if (type === 'TCPCONNECTWRAP') connects.push(resource);
    },
  }).enable();
  try {
    await fn();
  } finally {
    hook.disable();
  }
  return connects.filter((c) => c.port === port).length;
}

describe('API requests through loadKubeConfig share keep-alive connections', () => {
  let dir: string;
  let api: ApiServer;
  let listen: string;
  let port: number;

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'amesh-conn-reuse-'));
    [port] = (await freePorts('127.0.0.1', 1)) as [number];
    listen = `127.0.0.1:${String(port)}`;
    api = await startApiServer(path.join(dir, 'data'), { listen });
  });
  after(async () => {
    await api.stop();
    await rm(dir, { recursive: true, force: true });
  });

  test("client-node's own KubeConfig opens a TLS connection per request (why the pool exists)", async () => {
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(api.kubeconfigPath);
    const core = kc.makeApiClient(k8s.CoreV1Api);
    const opened = await socketsOpened(port, async () => {
      for (let i = 0; i < 4; i++) await core.readNamespace({ name: 'default' });
    });
    assert.equal(opened, 4);
  });

  test('sequential requests reuse one connection', async () => {
    const core = loadKubeConfig(api.kubeconfigPath, {}).makeApiClient(k8s.CoreV1Api);
    const opened = await socketsOpened(port, async () => {
      for (let i = 0; i < 6; i++) await core.readNamespace({ name: 'default' });
    });
    assert.equal(opened, 1);
  });

  test('concurrent requests open a connection each, then reuse them', async () => {
    const core = loadKubeConfig(api.kubeconfigPath, {}).makeApiClient(k8s.CoreV1Api);
    const burst = async (): Promise<void> => {
      await Promise.all([1, 2, 3].map(() => core.readNamespace({ name: 'default' })));
    };
    assert.equal(await socketsOpened(port, burst), 3);
    assert.equal(await socketsOpened(port, burst), 0);
  });

  test('a request after the API server restarted does not fail on the connection the old one closed', async () => {
    const core = loadKubeConfig(api.kubeconfigPath, {}).makeApiClient(k8s.CoreV1Api);
    await core.readNamespace({ name: 'default' });
    await api.stop();
    api = await startApiServer(path.join(dir, 'data'), { listen });
    const ns = await core.readNamespace({ name: 'default' });
    assert.equal(ns.metadata?.name, 'default');
  });
});
