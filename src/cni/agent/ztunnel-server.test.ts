import { describe, test, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { closeSync, openSync, readdirSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { isMeshError } from '../../lib/errors.js';
import { netnsId } from '../../native/native.js';
import { SeqpacketSocket } from '../../native/seqpacket-socket.js';
import { decodeWorkloadRequest, encodeAck, encodeHello, type WorkloadRequest } from '../../zds/zds-codec.js';
import { DatagramPeer } from '../../../test/helpers/datagram-peer.js';
import { ownNetnsFd } from '../../../test/helpers/recording-runner.js';
import { CapturedLogs } from '../../../test/helpers/captured-logs.js';
import type { SnapshotPod } from './ztunnel-link.js';
import { ZtunnelServer } from './ztunnel-server.js';

const info = { name: 'web', namespace: 'default', serviceAccount: 'web' };
const log = pino({ level: 'silent' });
const code = (c: string) => (e: unknown) => isMeshError(e) && e.code === c;
/** The hello and ack deadline in these tests (5 s by default), so a test of it does not wait 5 s. */
const DEADLINE_MS = 200;

/** Opens /dev/null into fd number `fd`, which must be the lowest free one (just closed): a reused fd number. */
function reuseFdNumber(fd: number): number {
  const other = openSync('/dev/null', 'r');
  assert.equal(other, fd, 'the closed fd number was reused');
  return other;
}

/** ztunnel's end, driven by hand: what the node agent sends, with the netns fd checked and closed. */
class ZtunnelEnd extends DatagramPeer {
  static connect(sockPath: string, hello = true): ZtunnelEnd {
    const end = new ZtunnelEnd(SeqpacketSocket.connect(sockPath));
    if (hello) end.socket.send(encodeHello());
    return end;
  }
  /** The next request; an Add's fd must be one network namespace (returned as its inode), others carry none. */
  async request(): Promise<WorkloadRequest & { netnsIno?: bigint }> {
    const { data, fds } = await this.next();
    const r = decodeWorkloadRequest(data);
    assert.equal(fds.length, r.kind === 'add' ? 1 : 0, `fds with ${r.kind}`);
    const [fd] = fds;
    if (fd === undefined) return r;
    const { ino } = netnsId(fd);
    closeSync(fd);
    return { ...r, netnsIno: ino };
  }
  ack(error = ''): void {
    this.socket.send(encodeAck(error));
  }
}

describe('node agent ZDS server (Istio cni/pkg/nodeagent/ztunnelserver.go)', () => {
  let dir: string;
  let sockPath: string;
  let pods: SnapshotPod[];
  let server: ZtunnelServer;
  const ownIno = netnsId('/proc/self/ns/net').ino;

  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'amesh-zds-server-'));
    sockPath = path.join(dir, 'ztunnel.sock');
    pods = [];
    server = new ZtunnelServer(sockPath, () => pods, log, { readWriteDeadlineMs: DEADLINE_MS });
  });
  afterEach(async () => {
    server.close();
    for (const p of pods) if (p.netns !== undefined) closeSync(p.netns);
    await rm(dir, { recursive: true, force: true });
  });

  /** A ztunnel that said hello and acked an empty snapshot. */
  const synced = async (): Promise<ZtunnelEnd> => {
    const z = ZtunnelEnd.connect(sockPath);
    const snapshot = once(server, 'snapshot');
    assert.equal((await z.request()).kind, 'snapshotSent');
    z.ack();
    await snapshot;
    return z;
  };

  test('a stale socket file left by a previous agent is removed before listening', async () => {
    writeFileSync(sockPath, 'stale');
    server.listen();
    await synced();
  });

  test('snapshot after hello: Add with the netns fd per pod that has one, Keep for one without, in order, a nack logged and not fatal, then SnapshotSent; ready after its ack', async () => {
    pods = [
      { uid: 'with-netns', info, netns: ownNetnsFd() },
      { uid: 'without-netns', info, netns: undefined },
    ];
    server.listen();
    const z = ZtunnelEnd.connect(sockPath);
    assert.deepEqual(await z.request(), { kind: 'add', uid: 'with-netns', info, netnsIno: ownIno });
    const next = z.request();
    z.ack('failure to start proxy : test');
    assert.deepEqual(await next, { kind: 'keep', uid: 'without-netns' });
    z.ack();
    assert.deepEqual(await z.request(), { kind: 'snapshotSent' });
    assert.equal(server.ready, false);
    const snapshot = once(server, 'snapshot');
    z.ack();
    await snapshot;
    assert.equal(server.ready, true);
  });

  test('addWorkload goes to the latest ztunnel only and resolves on its ack; delWorkload goes to every connected ztunnel', async () => {
    server.listen();
    const old = await synced();
    const latest = await synced();
    const fd = ownNetnsFd();
    const added = server.addWorkload('a', info, fd);
    assert.deepEqual(await latest.request(), { kind: 'add', uid: 'a', info, netnsIno: ownIno });
    latest.ack();
    await added;
    closeSync(fd);
    const deleted = server.delWorkload('a');
    assert.deepEqual(await old.request(), { kind: 'del', uid: 'a' });
    assert.deepEqual(await latest.request(), { kind: 'del', uid: 'a' });
    old.ack();
    latest.ack('not running');
    await deleted;
  });

  test("addWorkload: ZDS_ERR_NO_ZTUNNEL with no ztunnel connected, ZDS_ERR_NACK quoting ztunnel's reason on a nack", async () => {
    server.listen();
    const fd = ownNetnsFd();
    await assert.rejects(server.addWorkload('a', info, fd), code('ZDS_ERR_NO_ZTUNNEL'));
    const z = await synced();
    const added = server.addWorkload('a', info, fd);
    await z.request();
    z.ack('failure to start proxy : EADDRINUSE');
    await assert.rejects(
      added,
      (e: unknown) => isMeshError(e, 'ZDS_ERR_NACK') && e.message.includes('failure to start proxy : EADDRINUSE'),
    );
    closeSync(fd);
  });

  test('an addWorkload made during the snapshot is sent after SnapshotSent is acked, never between a request and its ack, with the netns its fd was on at the call though the caller closed it and the number was reused', async () => {
    pods = [{ uid: 'snap', info, netns: undefined }];
    server.listen();
    const z = ZtunnelEnd.connect(sockPath);
    assert.equal((await z.request()).kind, 'keep');
    const fd = ownNetnsFd();
    const added = server.addWorkload('later', info, fd);
    closeSync(fd);
    const other = reuseFdNumber(fd);
    try {
      z.ack();
      assert.equal((await z.request()).kind, 'snapshotSent');
      z.ack();
      assert.deepEqual(await z.request(), { kind: 'add', uid: 'later', info, netnsIno: ownIno });
      z.ack();
      await added;
    } finally {
      closeSync(other);
    }
  });

  test('a datagram ztunnel sends unasked closes its connection (keepalive: any message is a protocol error)', async () => {
    server.listen();
    const z = await synced();
    const gone = once(server, 'disconnected');
    z.ack();
    await gone;
    await z.closed;
    assert.equal(server.ready, false);
  });

  test(`no ack within the deadline (${DEADLINE_MS} ms here): the request fails with ZDS_ERR_TIMEOUT and the connection is closed`, async () => {
    server.listen();
    const z = await synced();
    const fd = ownNetnsFd();
    const added = server.addWorkload('a', info, fd);
    await z.request();
    await assert.rejects(added, code('ZDS_ERR_TIMEOUT'));
    closeSync(fd);
    await z.closed;
  });

  test(`no ZdsHello within the deadline (${DEADLINE_MS} ms here): the connection is closed without a snapshot`, async () => {
    server.listen();
    const z = ZtunnelEnd.connect(sockPath, false);
    await z.closed;
    assert.equal(server.ready, false);
  });

  test("a snapshot pod's fd closed by the caller while earlier pods are sent (its number reused) still sends that pod's netns", async () => {
    const second = ownNetnsFd();
    pods = [
      { uid: 'first', info, netns: undefined },
      { uid: 'second', info, netns: second },
    ];
    server.listen();
    const z = ZtunnelEnd.connect(sockPath);
    assert.equal((await z.request()).kind, 'keep');
    closeSync(second);
    pods = [];
    const other = reuseFdNumber(second);
    try {
      z.ack();
      assert.deepEqual(await z.request(), { kind: 'add', uid: 'second', info, netnsIno: ownIno });
      z.ack();
      assert.equal((await z.request()).kind, 'snapshotSent');
      const snapshot = once(server, 'snapshot');
      z.ack();
      await snapshot;
    } finally {
      closeSync(other);
    }
  });

  test('an Add on a connection ztunnel already closed (not yet seen by the agent) fails with ZDS_ERR_NO_ZTUNNEL, the system error as its cause', async () => {
    server.listen();
    const z = await synced();
    const fd = ownNetnsFd();
    try {
      z.socket.close();
      await assert.rejects(
        server.addWorkload('a', info, fd),
        (e: unknown) => isMeshError(e, 'ZDS_ERR_NO_ZTUNNEL') && e.cause !== undefined,
      );
    } finally {
      closeSync(fd);
    }
  });

  test(
    'an accept that fails with EMFILE (fd limit reached) does not stop the server: it accepts the ztunnel once fds are free',
    {
      skip:
        spawnSync('prlimit', ['--version']).status === 0
          ? false
          : "needs prlimit (util-linux) to lower this process's fd limit",
    },
    async () => {
      const logs = new CapturedLogs('agent', 'info');
      server = new ZtunnelServer(sockPath, () => pods, logs.control.scope('zds'), { readWriteDeadlineMs: DEADLINE_MS });
      server.listen();
      const limit = (soft: string): void => {
        const r = spawnSync('prlimit', ['--pid', String(process.pid), `--nofile=${soft}:`], { encoding: 'utf8' });
        assert.equal(r.status, 0, r.error?.message ?? r.stderr);
      };
      const original = spawnSync(
        'prlimit',
        ['--pid', String(process.pid), '--nofile', '--raw', '--noheadings', '--output=SOFT'],
        { encoding: 'utf8' },
      ).stdout.trim();
      const z = ZtunnelEnd.connect(sockPath);
      const snapshot = once(server, 'snapshot');
      // Every fd number below the limit in use: the accepted socket can get none. The limit leaves
      // room above today's highest fd, so closing the fillers frees enough for spawning prlimit again.
      const fillers: number[] = [];
      try {
        limit(String(Math.max(...readdirSync('/proc/self/fd').map(Number)) + 64));
        for (;;) {
          try {
            fillers.push(openSync('/dev/null', 'r'));
          } catch (e) {
            assert.equal((e as NodeJS.ErrnoException).code, 'EMFILE');
            break;
          }
        }
        const failed = await logs.waitFor(
          'the failed accept',
          (l) => typeof l.err === 'string' && l.err.includes('EMFILE'),
        );
        assert.equal(failed.message, 'could not take a ztunnel connection; accepting again after a pause');
      } finally {
        for (const fd of fillers) closeSync(fd);
        limit(original);
      }
      assert.equal((await z.request()).kind, 'snapshotSent');
      z.ack();
      await snapshot;
    },
  );
});
