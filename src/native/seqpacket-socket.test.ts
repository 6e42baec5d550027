import { describe, test, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { closeSync, existsSync, openSync, readdirSync, readFileSync, readlinkSync, writeSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { seqpacket } from './native.js';
import { SeqpacketServer, SeqpacketSocket } from './seqpacket-socket.js';

/** O_CLOEXEC as /proc/PID/fdinfo shows it, in the octal `flags:` line. */
const O_CLOEXEC = 0o2000000;

function fdFlags(fd: number): number {
  const line = readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('flags:'))!;
  return parseInt(line.split(/\s+/)[1]!, 8);
}

/** Every datagram `socket` receives, kept in order, with a way to wait for the nth. */
function collect(socket: SeqpacketSocket): { got: [Buffer, number[]][]; atLeast: (n: number) => Promise<void> } {
  const got: [Buffer, number[]][] = [];
  const waiters: [number, () => void][] = [];
  socket.on('message', (data, fds) => {
    got.push([data, fds]);
    for (const w of waiters.filter(([n]) => got.length >= n)) w[1]();
  });
  return { got, atLeast: (n) => (got.length >= n ? Promise.resolve() : new Promise((r) => waiters.push([n, r]))) };
}

describe('SeqpacketSocket (AF_UNIX SOCK_SEQPACKET over a libuv poll)', () => {
  let dir: string;
  let server: SeqpacketServer;
  let client: SeqpacketSocket;
  let peer: SeqpacketSocket;

  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'amesh-seqpacket-'));
    server = SeqpacketServer.listen(path.join(dir, 'zds.sock'));
    const accepted = once(server, 'connection') as Promise<[SeqpacketSocket]>;
    client = SeqpacketSocket.connect(server.path);
    [peer] = await accepted;
  });

  afterEach(async () => {
    client.close();
    peer.close();
    server.close();
    await rm(dir, { recursive: true, force: true });
  });

  test('SCM_RIGHTS: a file fd sent with a datagram arrives as a new close-on-exec fd on the same file', async () => {
    const file = path.join(dir, 'written-through-the-passed-fd');
    const fd = openSync(file, 'w');
    const received = collect(peer);
    assert.equal(client.send(Buffer.from('add-workload'), [fd]), true);
    closeSync(fd); // the message holds its own reference: the sender closes its fd at once
    await received.atLeast(1);
    const [[data, fds]] = received.got as [[Buffer, number[]]];
    assert.equal(data.toString(), 'add-workload');
    assert.equal(fds.length, 1);
    const passed = fds[0]!;
    assert.equal(readlinkSync(`/proc/self/fd/${passed}`), file);
    assert.equal(fdFlags(passed) & O_CLOEXEC, O_CLOEXEC);
    writeSync(passed, 'via SCM_RIGHTS');
    closeSync(passed);
    assert.equal(readFileSync(file, 'utf8'), 'via SCM_RIGHTS');
  });

  test('SOCK_SEQPACKET keeps datagram boundaries: a burst arrives as the same messages, in order, both ways', async () => {
    const sizes = [1, 7, 1000, 65536, 3];
    const toPeer = collect(peer);
    const toClient = collect(client);
    for (const [i, n] of sizes.entries()) assert.equal(client.send(Buffer.alloc(n, i + 1)), true);
    assert.equal(peer.send(Buffer.from('ack')), true);
    await Promise.all([toPeer.atLeast(sizes.length), toClient.atLeast(1)]);
    assert.deepEqual(
      toPeer.got.map(([d, fds]) => [d.length, d[0], d.every((b) => b === d[0]), fds.length]),
      sizes.map((n, i) => [n, i + 1, true, 0]),
    );
    assert.equal(toClient.got[0]![0].toString(), 'ack');
  });

  test('sendmsg EAGAIN: send() returns false, sending nothing, once the peer queue is full; drain follows its reads', async () => {
    const received = collect(peer);
    let sent = 0;
    // The peer reads only when this loop yields, so its queue fills (net.unix.max_dgram_qlen datagrams).
    while (client.send(Buffer.from(`m${sent}`))) sent++;
    assert.ok(sent > 0 && sent < 10_000, `sent ${sent} before EAGAIN`);
    await once(client, 'drain');
    assert.equal(client.send(Buffer.from(`m${sent}`)), true);
    await received.atLeast(sent + 1);
    assert.deepEqual(
      received.got.map(([d]) => d.toString()),
      Array.from({ length: sent + 1 }, (_, i) => `m${i}`),
    );
  });

  test('close: the peer reads end of stream (recv 0) and emits close; sending after close is EBADF', async () => {
    const closed = once(peer, 'close');
    client.close();
    await closed;
    assert.throws(() => client.send(Buffer.from('late')), { code: 'EBADF' });
  });

  test('sendmsg arguments: an empty datagram (it would read as the end), a non-Buffer and a negative fd are refused', () => {
    assert.throws(() => client.send(Buffer.alloc(0)), RangeError);
    assert.throws(() => client.send('text' as unknown as Buffer), TypeError);
    assert.throws(() => client.send(Buffer.from('x'), [-1]), RangeError);
  });

  test('a datagram that no listener takes has its SCM_RIGHTS fds closed, not leaked', async () => {
    const file = path.join(dir, 'unheard');
    const fd = openSync(file, 'w');
    client.send(Buffer.from('unheard'), [fd]);
    closeSync(fd);
    // The peer reads its queue in order, so its 'close' (end of stream) comes after the datagram was handled.
    const closed = once(peer, 'close');
    client.close();
    await closed;
    const open = readdirSync('/proc/self/fd').filter((n) => {
      try {
        return readlinkSync(`/proc/self/fd/${n}`) === file;
      } catch {
        return false; // the fd readdir itself used, gone by now
      }
    });
    assert.deepEqual(open, []);
  });

  test('connect (non-blocking, to a path with no listener) fails at once with ENOENT; close removes the socket file', async () => {
    assert.throws(() => SeqpacketSocket.connect(path.join(dir, 'nobody')), { code: 'ENOENT', syscall: 'connect' });
    const closed = once(server, 'close');
    server.close();
    await closed;
    assert.equal(existsSync(path.join(dir, 'zds.sock')), false);
  });
});

test('a peer that closes with our datagram unread resets the connection: the poll error is reported as ECONNRESET (SO_ERROR), not EBADF', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'amesh-seqpacket-'));
  const listener = seqpacket.listen(path.join(dir, 'reset.sock'), 1);
  const client = SeqpacketSocket.connect(path.join(dir, 'reset.sock'));
  try {
    const accepted = seqpacket.accept(listener);
    assert.notEqual(accepted, null);
    assert.equal(client.send(Buffer.from('never read')), true);
    const failed = once(client, 'error') as Promise<[NodeJS.ErrnoException]>;
    // The kernel gives the peer of a socket closed with data in its queue ECONNRESET (POLLERR).
    closeSync(accepted!);
    const [err] = await failed;
    assert.equal(err.code, 'ECONNRESET', err.message);
  } finally {
    client.close();
    closeSync(listener);
    await rm(dir, { recursive: true, force: true });
  }
});
