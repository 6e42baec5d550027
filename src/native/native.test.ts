import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { once } from 'node:events';
import { closeSync, openSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { isMeshError } from '../lib/errors.js';
import { listenInNetns, netnsId, originalDst, setMark, tcpSocketInNetns, udpSocketInNetns } from './native.js';

// These need no privilege; test/native-netns.test.ts enters namespaces as root.

test('netnsId (fstat of an nsfs file): the same (dev, ino) through a path, this thread and an fd', () => {
  const self = netnsId('/proc/self/ns/net');
  assert.equal(typeof self.ino, 'bigint');
  assert.deepEqual(netnsId('/proc/thread-self/ns/net'), self);
  const fd = openSync('/proc/self/ns/net', 'r');
  try {
    assert.deepEqual(netnsId(fd), self);
  } finally {
    closeSync(fd);
  }
});

test('netnsId (ioctl NS_GET_NSTYPE): a file that is no network namespace is EINVAL, not an identity', () => {
  assert.throws(() => netnsId('/proc/self/ns/uts'), { code: 'EINVAL', syscall: 'ioctl' });
  assert.throws(() => netnsId('/etc/hostname'), { code: 'EINVAL', syscall: 'ioctl' });
  assert.throws(() => netnsId('/nonexistent/netns'), { code: 'ENOENT', syscall: 'open' });
});

test('open of a missing netns path is AMESH_ERR_NETNS with ENOENT as its cause, before any setns', () => {
  assert.throws(
    () => tcpSocketInNetns('/var/run/netns/amesh-no-such-netns', 4),
    (e: unknown) => isMeshError(e, 'AMESH_ERR_NETNS') && (e.cause as NodeJS.ErrnoException).code === 'ENOENT',
  );
});

test('bad arguments throw TypeError or RangeError before any syscall, never crash', async () => {
  const server = net.createServer();
  const bad = (opts: object) => listenInNetns(server, '/proc/self/ns/net', { host: '127.0.0.1', port: 0, ...opts });
  await assert.rejects(bad({ host: 'not-an-ip' }), TypeError);
  await assert.rejects(bad({ port: 65536 }), RangeError);
  await assert.rejects(bad({ port: 1.5 }), RangeError);
  await assert.rejects(bad({ mark: -1 }), RangeError);
  await assert.rejects(bad({ transparent: 'yes' }), TypeError);
  await assert.rejects(bad({ backlog: 'many' }), TypeError);
  await assert.rejects(udpSocketInNetns({} as string, { host: '127.0.0.1', port: 0 }), TypeError);
  assert.throws(() => tcpSocketInNetns(-1, 4), RangeError);
  assert.throws(() => tcpSocketInNetns('/proc/self/ns/net', 5 as 4), RangeError);
  assert.equal(server.listening, false);
  // A socket that is not open yet has no fd to set an option on.
  assert.throws(() => setMark(new net.Socket(), 1), TypeError);
});

test('originalDst (SO_ORIGINAL_DST) on a connection no REDIRECT touched: its own destination, or ENOENT without conntrack', async () => {
  const server = net.createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as net.AddressInfo;
  const accepted = once(server, 'connection') as Promise<[net.Socket]>;
  const client = net.connect(port, '127.0.0.1');
  const [socket] = await accepted;
  try {
    // Whether conntrack tracks this namespace depends on what else uses NAT on the machine; both answers are
    // right, and neither is a crash or someone else's address.
    try {
      assert.deepEqual(originalDst(socket), { address: '127.0.0.1', port, family: 4 });
    } catch (e) {
      assert.equal((e as NodeJS.ErrnoException).code, 'ENOENT');
      assert.equal((e as NodeJS.ErrnoException).syscall, 'getsockopt');
    }
  } finally {
    client.destroy();
    socket.destroy();
    server.close();
  }
});

test('originalDst (SO_DOMAIN) on a unix-domain socket is EAFNOSUPPORT', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'amesh-native-'));
  const server = net.createServer().listen(path.join(dir, 's'));
  await once(server, 'listening');
  const accepted = once(server, 'connection') as Promise<[net.Socket]>;
  const client = net.connect(path.join(dir, 's'));
  const [socket] = await accepted;
  try {
    assert.throws(() => originalDst(socket), { code: 'EAFNOSUPPORT' });
  } finally {
    client.destroy();
    socket.destroy();
    server.close();
    await rm(dir, { recursive: true });
  }
});
