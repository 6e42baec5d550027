// ZDS against an independent peer: a Go program (standard library only: net.ListenUnix/DialUnix "unixpacket",
// syscall.UnixRights, the protobuf wire format by hand) shaped as Istio's node agent and as Istio's ztunnel.
// Real pod network namespaces cross as SCM_RIGHTS. Root only (setns), and Go must be installed.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { closeSync, openSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { ZtunnelServer } from '../src/cni/agent/ztunnel-server.js';
import { isMeshError, type MeshError } from '../src/lib/errors.js';
import { netnsId } from '../src/native/native.js';
import { ZdsClient } from '../src/ztunnel/inpod/zds-client.js';
import { buildGoPeer, goSkip, startGoPeer } from './helpers/go.js';
import { ListenerRunner } from './helpers/listener-runner.js';
import { netnsSkip, TestNetns } from './helpers/netns.js';

const skip = netnsSkip() || goSkip();
const log = pino({ level: 'silent' });
/** This test's loopback address, inside each pod namespace. */
const HOST = '127.90.0.2';
const PORT = 15001;

describe("ZDS against Go peers shaped as Istio's node agent and ztunnel", { skip }, () => {
  let dir: string;
  let go: string;
  let podA: TestNetns;
  let podB: TestNetns;

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'amesh-zds-go-'));
    [go, podA, podB] = await Promise.all([buildGoPeer('zds_go'), TestNetns.create(), TestNetns.create()]);
  });
  after(async () => {
    await Promise.all([podA.remove(), podB.remove()]);
    await rm(dir, { recursive: true, force: true });
  });

  test('an Istio-shaped node agent drives our ztunnel: hello, Add with a netns fd, Keep, SnapshotSent, Del acked; a non-netns fd, bad bytes and a second SnapshotSent nacked', async () => {
    const sock = path.join(dir, 'agent.sock');
    const peer = startGoPeer(go, ['agent', sock, podA.path, podB.path], 'listening');
    await peer.ready;
    const runner = new ListenerRunner(HOST, PORT);
    const ztunnel = new ZdsClient(sock, runner, log);
    const stopped = once(ztunnel, 'stopped') as Promise<[MeshError]>;
    ztunnel.start();
    try {
      const [status] = (await once(peer.proc, 'exit')) as [number | null];
      assert.equal(status, 0, peer.output());
      const lines = peer.output().trim().split('\n');
      const expected: (string | RegExp)[] = [
        'listening',
        'hello version=1',
        'add pod-a ack',
        'keep pod-k ack',
        'snapshot_sent ack',
        'add pod-b ack',
        /^add pod-uts nack: failure to start proxy : ZDS_ERR_PROXY_START: .*not a network namespace/,
        'del pod-a ack',
        /^garbage nack: failure to read message : ZDS_ERR_DECODE: /,
        'eof after garbage',
        'hello version=1',
        'add pod-b ack',
        'snapshot_sent ack',
        /^second snapshot_sent nack: failure to process message : ZDS_ERR_PROTOCOL: /,
        'eof after a second snapshot_sent',
      ];
      assert.equal(lines.length, expected.length, peer.output());
      expected.forEach((e, i) => (typeof e === 'string' ? assert.equal(lines[i], e) : assert.match(lines[i]!, e)));
      const [err] = await stopped;
      assert.ok(isMeshError(err, 'ZDS_ERR_PROTOCOL'));
      // pod-b's proxy was not restarted by the second snapshot (same netns); pod-a's went with its Del.
      assert.deepEqual(runner.starts, ['pod-a', 'pod-b']);
      assert.equal(await runner.probe(podB.path), 'pod-b');
      assert.equal(await runner.probe(podA.path), 'ECONNREFUSED');
    } finally {
      ztunnel.close();
    }
  });

  test('our node agent drives an Istio-shaped ztunnel: snapshot (Add with a netns fd that ioctl NS_GET_NSTYPE says is CLONE_NEWNET, Keep, SnapshotSent), then Add, a nacked Add, Del', async () => {
    const sock = path.join(dir, 'ztunnel.sock');
    const fdA = openSync(podA.path, 'r');
    const fdB = openSync(podB.path, 'r');
    const info = (name: string) => ({ name, namespace: 'default', serviceAccount: `${name}-sa` });
    const agent = new ZtunnelServer(
      sock,
      () => [
        { uid: 'pod-a', info: info('pod-a'), netns: fdA },
        { uid: 'pod-k', info: info('pod-k'), netns: undefined },
      ],
      log,
    );
    agent.listen();
    const synced = once(agent, 'snapshot');
    const peer = startGoPeer(go, ['ztunnel', sock], '"kind":"snapshot_sent"');
    try {
      await synced;
      assert.equal(agent.ready, true);
      await agent.addWorkload('pod-b', info('pod-b'), fdB);
      await assert.rejects(
        agent.addWorkload('nack-me', info('nack-me'), fdB),
        (e: unknown) => isMeshError(e, 'ZDS_ERR_NACK') && e.message.includes('the go peer refuses nack-me'),
      );
      await agent.delWorkload('pod-a');
      const exited = once(peer.proc, 'exit') as Promise<[number | null]>;
      agent.close();
      const [status] = await exited;
      assert.equal(status, 0, peer.output());
      const got = peer
        .output()
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      const ino = (p: TestNetns): string => String(netnsId(p.path).ino);
      const add = (uid: string, p: TestNetns) => ({ kind: 'add', uid, fds: 1, netns: true, ino: ino(p), ...info(uid) });
      assert.deepEqual(got, [
        add('pod-a', podA),
        { kind: 'keep', uid: 'pod-k', fds: 0 },
        { kind: 'snapshot_sent', uid: '', fds: 0 },
        add('pod-b', podB),
        add('nack-me', podB),
        { kind: 'del', uid: 'pod-a', fds: 0 },
        { kind: 'eof' },
      ]);
    } finally {
      agent.close();
      peer.proc.kill();
      closeSync(fdA);
      closeSync(fdB);
    }
  });
});
