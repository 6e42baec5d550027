// ZDS end to end: amesh's node agent server (ZtunnelServer) and ztunnel client (ZdsClient) over a real
// SOCK_SEQPACKET socket, with real pod network namespaces whose fds cross as SCM_RIGHTS. The runner binds a
// listener inside each pod's namespace, so what ztunnel runs is probed from outside. Root only (setns).
import { describe, test, before, after, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { closeSync, openSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { ZtunnelServer } from '../src/cni/agent/ztunnel-server.js';
import type { SnapshotPod } from '../src/cni/agent/ztunnel-link.js';
import { ZdsClient } from '../src/ztunnel/inpod/zds-client.js';
import { ListenerRunner } from './helpers/listener-runner.js';
import { netnsSkip, TestNetns } from './helpers/netns.js';

const skip = netnsSkip();
const log = pino({ level: 'silent' });
/** This test's loopback address, inside each pod namespace. */
const HOST = '127.91.0.1';
const PORT = 15001;

const infoOf = (uid: string) => ({ name: uid, namespace: 'default', serviceAccount: 'sa' });

describe("ZDS between amesh's node agent and amesh's ztunnel, on real pod network namespaces", { skip }, () => {
  let dir: string;
  let sockPath: string;
  let podA: TestNetns;
  let podB: TestNetns;
  /** The node agent's netns cache: what its snapshot sends. */
  let cache: Map<string, SnapshotPod>;
  let agent: ZtunnelServer;
  let runner: ListenerRunner;
  let ztunnel: ZdsClient;

  const newAgent = (): ZtunnelServer => {
    agent = new ZtunnelServer(sockPath, () => [...cache.values()], log);
    agent.listen();
    return agent;
  };
  /** Starts a ztunnel and resolves once it is ready (snapshot in, nothing pending). */
  const newZtunnel = async (): Promise<ZdsClient> => {
    ztunnel = new ZdsClient(sockPath, runner, log);
    const ready = once(ztunnel, 'ready');
    ztunnel.start();
    assert.deepEqual(await ready, [true]);
    return ztunnel;
  };
  /** Enrolls a pod as the node agent does: into its cache, then AddWorkload with an fd on its netns. */
  const enroll = async (uid: string, ns: TestNetns): Promise<void> => {
    const netns = openSync(ns.path, 'r');
    cache.set(uid, { uid, info: infoOf(uid), netns });
    await agent.addWorkload(uid, infoOf(uid), netns);
  };
  const unenroll = async (uid: string): Promise<void> => {
    const pod = cache.get(uid);
    cache.delete(uid);
    await agent.delWorkload(uid);
    if (pod?.netns !== undefined) closeSync(pod.netns);
  };

  before(async () => {
    [podA, podB] = await Promise.all([TestNetns.create(), TestNetns.create()]);
  });
  after(async () => {
    await Promise.all([podA.remove(), podB.remove()]);
  });
  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'amesh-zds-'));
    sockPath = path.join(dir, 'ztunnel.sock');
    cache = new Map();
    runner = new ListenerRunner(HOST, PORT);
    newAgent();
  });
  afterEach(async () => {
    ztunnel.close();
    agent.close();
    for (const pod of cache.values()) if (pod.netns !== undefined) closeSync(pod.netns);
    await rm(dir, { recursive: true, force: true });
  });

  test('AddWorkload with the pod netns fd starts its proxy inside that namespace; DelWorkload stops it', async () => {
    await newZtunnel();
    await enroll('pod-a', podA);
    await enroll('pod-b', podB);
    assert.equal(await runner.probe(podA.path), 'pod-a');
    assert.equal(await runner.probe(podB.path), 'pod-b');
    await unenroll('pod-a');
    assert.equal(await runner.probe(podA.path), 'ECONNREFUSED');
    assert.equal(await runner.probe(podB.path), 'pod-b');
  });

  test('ztunnel restart: the new ztunnel gets the snapshot (Add with each netns fd) and serves the pods again', async () => {
    await newZtunnel();
    await enroll('pod-a', podA);
    ztunnel.close();
    assert.equal(await runner.probe(podA.path), 'ECONNREFUSED');
    runner = new ListenerRunner(HOST, PORT);
    await newZtunnel();
    assert.deepEqual(runner.starts, ['pod-a']);
    assert.equal(await runner.probe(podA.path), 'pod-a');
  });

  test('node agent restart: the same netns in the new snapshot is a no-op (no proxy restarted), a pod missing from it is stopped', async () => {
    await newZtunnel();
    await enroll('pod-a', podA);
    await enroll('pod-b', podB);
    const gone = cache.get('pod-b')!;
    cache.delete('pod-b');
    closeSync(gone.netns!);
    agent.close();
    const notReady = once(ztunnel, 'ready');
    newAgent();
    assert.deepEqual(await notReady, [false]);
    assert.deepEqual(await once(ztunnel, 'ready'), [true]);
    assert.deepEqual(runner.starts, ['pod-a', 'pod-b']);
    assert.equal(await runner.probe(podA.path), 'pod-a');
    assert.equal(await runner.probe(podB.path), 'ECONNREFUSED');
  });

  test('Keep: a pod the restarted agent has no netns fd for keeps its proxy through the snapshot', async () => {
    await newZtunnel();
    await enroll('pod-a', podA);
    closeSync(cache.get('pod-a')!.netns!);
    cache.set('pod-a', { uid: 'pod-a', info: infoOf('pod-a'), netns: undefined });
    agent.close();
    const notReady = once(ztunnel, 'ready');
    newAgent();
    assert.deepEqual(await notReady, [false]);
    assert.deepEqual(await once(ztunnel, 'ready'), [true]);
    assert.equal(await runner.probe(podA.path), 'pod-a');
  });
});
