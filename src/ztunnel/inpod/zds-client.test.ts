import { describe, test, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { closeSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { isMeshError, type MeshError } from '../../lib/errors.js';
import { SeqpacketServer } from '../../native/seqpacket-socket.js';
import {
  decodeAck,
  decodeHello,
  encodeWorkloadRequest,
  ZdsVersion,
  type WorkloadRequest,
} from '../../zds/zds-codec.js';
import { DatagramPeer } from '../../../test/helpers/datagram-peer.js';
import { ownNetnsFd, RecordingRunner } from '../../../test/helpers/recording-runner.js';
import { CapturedLogs } from '../../../test/helpers/captured-logs.js';
import { ZdsClient } from './zds-client.js';

const info = { name: 'web', namespace: 'default', serviceAccount: 'web' };
const log = pino({ level: process.env.ZDS_TEST_LOG ?? 'silent' });
/** The pending-pod retry interval in these tests (5 s by default), so a test of it does not wait 5 s. */
const RETRY_MS = 100;

/** The node agent's end of one connection, driven datagram by datagram. */
class AgentEnd extends DatagramPeer {
  /** The next datagram's bytes (ztunnel sends no fds: any would be closed). */
  async nextData(): Promise<Buffer> {
    const { data, fds } = await this.next();
    for (const fd of fds) closeSync(fd);
    return data;
  }
  /** Sends a request (an Add gets a fresh fd on this process's netns unless `fds` says otherwise); resolves with the ack's error. */
  async request(r: WorkloadRequest | Buffer, fds?: number[]): Promise<string> {
    const sent = fds ?? (!Buffer.isBuffer(r) && r.kind === 'add' ? [ownNetnsFd()] : []);
    this.socket.send(Buffer.isBuffer(r) ? r : encodeWorkloadRequest(r), sent);
    for (const fd of sent) closeSync(fd);
    return decodeAck(await this.nextData());
  }
}

describe('ztunnel ZDS client (ztunnel src/inpod/workloadmanager.rs, protocol.rs)', () => {
  let dir: string;
  let sockPath: string;
  let server: SeqpacketServer | undefined;
  let runner: RecordingRunner;
  let client: ZdsClient;

  /** Connections not yet taken by `accept`, and `accept`s waiting for one. */
  let arrived: AgentEnd[];
  let takers: ((a: AgentEnd) => void)[];
  const listen = (): void => {
    server = SeqpacketServer.listen(sockPath);
    server.on('connection', (socket) => {
      const agent = new AgentEnd(socket);
      const take = takers.shift();
      if (take === undefined) arrived.push(agent);
      else take(agent);
    });
  };
  const accept = (): Promise<AgentEnd> => {
    const agent = arrived.shift();
    return agent !== undefined ? Promise.resolve(agent) : new Promise((resolve) => takers.push(resolve));
  };
  /** Accepts the client's connection and reads its hello. */
  const connected = async (): Promise<AgentEnd> => {
    const agent = await accept();
    assert.equal(decodeHello(await agent.nextData()), ZdsVersion.V1);
    return agent;
  };

  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'amesh-zds-client-'));
    sockPath = path.join(dir, 'ztunnel.sock');
    arrived = [];
    takers = [];
    runner = new RecordingRunner();
    client = new ZdsClient(sockPath, runner, log, { pendingRetryMs: RETRY_MS });
  });
  afterEach(async () => {
    client.close();
    server?.close();
    server = undefined;
    await rm(dir, { recursive: true, force: true });
  });

  test('connect: ZdsHello{V1} first; each request acked after the state manager acted; ready once SnapshotSent is acked', async () => {
    listen();
    client.start();
    const agent = await connected();
    assert.equal(await agent.request({ kind: 'add', uid: 'a', info }), '');
    assert.deepEqual(runner.events, ['start a']);
    assert.equal(client.ready, false);
    const ready = once(client, 'ready');
    assert.equal(await agent.request({ kind: 'snapshotSent' }), '');
    assert.deepEqual(await ready, [true]);
    assert.equal(client.ready, true);
    assert.equal(await agent.request({ kind: 'del', uid: 'a' }), '');
    assert.deepEqual(runner.events, ['start a', 'stop a']);
  });

  test('reconnect with backoff: before the node agent listens (each failed connect waits longer), and after it drops the connection (readiness lost until the next snapshot)', async () => {
    const logs = new CapturedLogs('ztunnel', 'info');
    client = new ZdsClient(sockPath, runner, logs.control.scope('inpod'), { pendingRetryMs: RETRY_MS });
    client.start();
    // Nothing listens yet: connects fail and are retried, the delay doubling (jittered within [d/2, d]).
    const retries = (): number[] =>
      logs.lines.filter((l) => l.code === 'ZDS_ERR_NO_NODE_AGENT').map((l) => l.retryMs as number);
    await logs.waitFor('a fourth failed connect', () => retries().length >= 4);
    const delays = retries();
    for (let i = 2; i < delays.length; i++) assert.ok(delays[i]! > delays[i - 2]!, `delays grow: ${delays.join(', ')}`);
    listen();
    const first = await connected();
    await first.request({ kind: 'snapshotSent' });
    assert.equal(client.ready, true);
    const notReady = once(client, 'ready');
    first.socket.close();
    assert.deepEqual(await notReady, [false]);
    const second = await connected();
    assert.equal(await second.request({ kind: 'snapshotSent' }), '', 'a new connection takes a new snapshot');
  });

  test('an undecodable datagram gets a nack "failure to read message : ZDS_ERR_DECODE ...", then the connection is dropped and ztunnel reconnects', async () => {
    listen();
    client.start();
    const agent = await connected();
    const nack = await agent.request(Buffer.from('0a0e0a01', 'hex'));
    assert.match(nack, /^failure to read message : ZDS_ERR_DECODE/);
    await agent.closed;
    await connected();
  });

  test('a request read in the same batch as an undecodable one is not acted on: the connection is dropped at the nack', async () => {
    listen();
    client.start();
    const agent = await connected();
    const fd = ownNetnsFd();
    agent.socket.send(Buffer.from('0a0e0a01', 'hex'));
    agent.socket.send(encodeWorkloadRequest({ kind: 'add', uid: 'a', info }), [fd]);
    closeSync(fd);
    assert.match(decodeAck(await agent.nextData()), /^failure to read message : ZDS_ERR_DECODE/);
    await agent.closed;
    const again = await connected();
    assert.equal(await again.request({ kind: 'snapshotSent' }), '');
    assert.deepEqual(runner.events, [], 'the Add behind the bad datagram never reached the state manager');
  });

  test('an AddWorkload without its netns fd, or a Del with one, gets a nack and a reconnect', async () => {
    listen();
    client.start();
    const agent = await connected();
    assert.match(
      await agent.request({ kind: 'add', uid: 'a', info }, []),
      /^failure to read message : .*without a netns fd/,
    );
    const again = await connected();
    assert.match(
      await again.request({ kind: 'del', uid: 'a' }, [ownNetnsFd()]),
      /^failure to read message : .*only AddWorkload carries one/,
    );
    assert.deepEqual(runner.events, []);
  });

  test('a protocol error (a second SnapshotSent) gets a nack "failure to process message : ZDS_ERR_PROTOCOL ..." and stops the client for good', async () => {
    listen();
    client.start();
    const agent = await connected();
    await agent.request({ kind: 'snapshotSent' });
    const stopped = once(client, 'stopped') as Promise<[MeshError]>;
    assert.match(await agent.request({ kind: 'snapshotSent' }), /^failure to process message : ZDS_ERR_PROTOCOL/);
    const [err] = await stopped;
    assert.ok(isMeshError(err, 'ZDS_ERR_PROTOCOL'));
    await agent.closed;
    assert.equal(client.ready, false);
  });

  test('a proxy that fails to start gets a nack "failure to start proxy : ...", stays pending (not ready), and is retried every retry interval until it starts', async () => {
    listen();
    client.start();
    const agent = await connected();
    runner.failing.add('a');
    assert.match(await agent.request({ kind: 'add', uid: 'a', info }), /^failure to start proxy : ZDS_ERR_PROXY_START/);
    assert.equal(await agent.request({ kind: 'snapshotSent' }), '');
    assert.deepEqual(client.pending(), ['a']);
    assert.equal(client.ready, false);
    runner.failing.delete('a');
    const ready = once(client, 'ready');
    await runner.waitFor('start a');
    assert.deepEqual(await ready, [true]);
    assert.deepEqual(client.pending(), []);
  });

  test(
    "close() while a pod's proxy is still starting: the proxy is stopped once its start completes",
    { timeout: 10_000 },
    async () => {
      listen();
      client.start();
      const agent = await connected();
      let release!: () => void;
      runner.hold = new Promise((resolve) => (release = resolve));
      const starting = runner.waitFor('starting a');
      const fd = ownNetnsFd();
      agent.socket.send(encodeWorkloadRequest({ kind: 'add', uid: 'a', info }), [fd]);
      closeSync(fd);
      await starting;
      client.close();
      const stopped = runner.waitFor('stop a');
      release();
      await stopped;
      assert.deepEqual(runner.events, ['start a', 'stop a']);
    },
  );
});
