// The addon's namespace and socket-option syscalls against the real kernel, in throwaway network namespaces
// (iproute2, iptables, ss as independent witnesses). Root only: CI runs as root, so these run there.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import dgram from 'node:dgram';
import { once } from 'node:events';
import { closeSync, openSync } from 'node:fs';
import { isMeshError } from '../src/lib/errors.js';
import {
  listenInNetns,
  netnsId,
  originalDst,
  setMark,
  setTransparent,
  tcpSocketInNetns,
  udpSocketInNetns,
  type NetnsId,
} from '../src/native/native.js';
import { TestNetns, netnsSkip } from './helpers/netns.js';

const skip = netnsSkip();
const ZTUNNEL_MARK = 0x539;

/** This (the main) thread's network namespace: the one every addon call must leave it in. */
const threadNetns = (): NetnsId => netnsId('/proc/thread-self/ns/net');

/** A server that answers each connection with `reply` and its SO_ORIGINAL_DST (or the errno code), then ends. */
function replyingServer(reply: string): net.Server {
  return net.createServer((socket) => {
    let dst: string;
    try {
      const d = originalDst(socket);
      dst = `${d.address}:${d.port}`;
    } catch (e) {
      dst = (e as NodeJS.ErrnoException).code ?? 'error';
    }
    socket.end(`${reply} ${dst}`);
  });
}

/** Connects `socket` and returns everything the server sent before it ended. */
async function readAll(socket: net.Socket, port: number, host: string): Promise<string> {
  socket.connect(port, host);
  let text = '';
  socket.on('data', (d: Buffer) => (text += d.toString()));
  await once(socket, 'end');
  socket.destroy();
  return text;
}

/** The line `ss` prints for the socket bound at `local` in `ns`, with its extended info and inet options. */
async function ssLine(ns: TestNetns, proto: '-t' | '-u', local: string): Promise<string> {
  const out = await ns.exec('ss', [proto, '-anHe', '--inet-sockopt']);
  // ss prints the inet options on a continuation line: fold them onto their socket's line.
  const lines = out.replace(/\n\s+inet-sockopt:/g, ' inet-sockopt:').split('\n');
  // Columns (one protocol, so no Netid): State Recv-Q Send-Q Local Peer ...
  const line = lines.find((l) => l.trim().split(/\s+/)[3] === local);
  assert.ok(line, `ss in ${ns.name} lists no socket at ${local}:\n${out}`);
  return line;
}

describe('native: sockets in network namespaces (setns, SO_MARK, IP_TRANSPARENT, SO_ORIGINAL_DST)', { skip }, () => {
  const host = threadNetns();
  let ns: TestNetns;
  const closers: (() => void)[] = [];
  const track = <T extends net.Server | net.Socket | dgram.Socket>(s: T): T => {
    closers.push(() => (s instanceof net.Socket ? s.destroy() : s.close()));
    return s;
  };

  before(async () => {
    ns = await TestNetns.create();
  });

  after(async () => {
    for (const close of closers) {
      try {
        close();
      } catch {
        // already closed by its test
      }
    }
    await ns?.remove();
  });

  test('setns for socket(): a listener made in the netns serves clients there, while the host keeps its own at the same address', async () => {
    const hostServer = track(replyingServer('host').listen(0, '127.0.0.1'));
    await once(hostServer, 'listening');
    const { port } = hostServer.address() as net.AddressInfo;
    const podServer = track(replyingServer('pod'));
    await listenInNetns(podServer, ns.path, { host: '127.0.0.1', port });
    assert.deepEqual(podServer.address(), { address: '127.0.0.1', family: 'IPv4', port });

    // A client process inside the netns (bash's /dev/tcp), one made there by the addon, and one on the host.
    const fromBash = await ns.exec('bash', ['-c', `exec 3<>/dev/tcp/127.0.0.1/${port}; cat <&3`]);
    assert.match(fromBash, /^pod /);
    assert.match(await readAll(track(tcpSocketInNetns(ns.path, 4)), port, '127.0.0.1'), /^pod /);
    assert.match(await readAll(track(new net.Socket()), port, '127.0.0.1'), /^host /);
    assert.deepEqual(threadNetns(), host);
  });

  test('a netns given as an open fd (as ZDS hands it over) is entered and stays open for its owner', async () => {
    const fd = openSync(ns.path, 'r');
    try {
      assert.deepEqual(netnsId(fd), netnsId(ns.path));
      assert.notDeepEqual(netnsId(fd), host);
      const server = track(net.createServer((s) => s.end('by fd')));
      await listenInNetns(server, fd, { host: '127.0.0.1', port: 0 });
      const { port } = server.address() as net.AddressInfo;
      assert.equal(await readAll(track(tcpSocketInNetns(fd, 4)), port, '127.0.0.1'), 'by fd');
      assert.deepEqual(netnsId(fd), netnsId(ns.path)); // the addon did not close the caller's fd
    } finally {
      closeSync(fd);
    }
  });

  test('setns back: the thread returns to its own netns after a bind that fails in the pod, and after a setns that fails', async () => {
    // 192.0.2.1 (TEST-NET-1) is no address of the namespace: bind fails there with EADDRNOTAVAIL.
    await assert.rejects(listenInNetns(net.createServer(), ns.path, { host: '192.0.2.1', port: 80 }), {
      code: 'EADDRNOTAVAIL',
      syscall: 'bind',
    });
    assert.deepEqual(threadNetns(), host);
    // An fd on a UTS namespace is no network namespace: setns(CLONE_NEWNET) refuses it.
    const uts = openSync('/proc/self/ns/uts', 'r');
    try {
      assert.throws(
        () => tcpSocketInNetns(uts, 4),
        (e: unknown) => isMeshError(e, 'AMESH_ERR_NETNS') && (e.cause as NodeJS.ErrnoException).code === 'EINVAL',
      );
    } finally {
      closeSync(uts);
    }
    assert.deepEqual(threadNetns(), host);
    // Node's own sockets are still the host's: a plain listener is absent from the pod's socket table.
    const plain = track(net.createServer().listen(0, '127.0.0.1'));
    await once(plain, 'listening');
    const { port } = plain.address() as net.AddressInfo;
    const podListeners = await ns.exec('ss', ['-tlnH']);
    assert.ok(!podListeners.includes(`:${port} `), podListeners);
    const client = track(net.connect(port, '127.0.0.1'));
    await once(client, 'connect');
  });

  test('SO_MARK and IP_TRANSPARENT as options: ss in the netns shows fwmark 0x539 and transparent on the listener', async () => {
    const server = track(net.createServer());
    await listenInNetns(server, ns.path, { host: '0.0.0.0', port: 0, mark: ZTUNNEL_MARK, transparent: true });
    const { port } = server.address() as net.AddressInfo;
    const line = await ssLine(ns, '-t', `0.0.0.0:${port}`);
    assert.match(line, /fwmark:0x539/);
    assert.match(line, /inet-sockopt: \(.*\btransparent\b/);
  });

  test('setMark and setTransparent on an open listener: ss shows both; without them, neither', async () => {
    const server = track(net.createServer());
    await listenInNetns(server, ns.path, { host: '127.0.0.1', port: 0 });
    const { port } = server.address() as net.AddressInfo;
    const before = await ssLine(ns, '-t', `127.0.0.1:${port}`);
    assert.doesNotMatch(before, /fwmark/);
    assert.doesNotMatch(before, /\btransparent\b/);
    setMark(server, ZTUNNEL_MARK);
    setTransparent(server);
    const after = await ssLine(ns, '-t', `127.0.0.1:${port}`);
    assert.match(after, /fwmark:0x539/);
    assert.match(after, /\btransparent\b/);
  });

  test('IP_TRANSPARENT and IPV6_TRANSPARENT let a listener bind addresses the netns does not have', async () => {
    for (const address of ['192.0.2.7', '2001:db8::7']) {
      await assert.rejects(listenInNetns(net.createServer(), ns.path, { host: address, port: 0 }), {
        code: 'EADDRNOTAVAIL',
      });
      const server = track(net.createServer());
      await listenInNetns(server, ns.path, { host: address, port: 0, transparent: true });
      assert.equal((server.address() as net.AddressInfo).address, address);
    }
  });

  test('an outbound socket made in the netns carries its mark and transparency on the connection ss sees', async () => {
    const server = track(net.createServer());
    await listenInNetns(server, ns.path, { host: '127.0.0.1', port: 0 });
    const { port } = server.address() as net.AddressInfo;
    const client = track(tcpSocketInNetns(ns.path, 4, { mark: ZTUNNEL_MARK, transparent: true }));
    client.connect(port, '127.0.0.1');
    await once(client, 'connect');
    const line = await ssLine(ns, '-t', `127.0.0.1:${client.localPort!}`);
    assert.match(line, /fwmark:0x539/);
    assert.match(line, /\btransparent\b/);
  });

  test('SO_REUSEPORT: a second listener binds the same port beside the first (a new ztunnel taking over); with reusePort false, EADDRINUSE', async () => {
    const first = track(net.createServer());
    await listenInNetns(first, ns.path, { host: '127.0.0.1', port: 0 });
    const { port } = first.address() as net.AddressInfo;
    const second = track(net.createServer());
    await listenInNetns(second, ns.path, { host: '127.0.0.1', port });
    assert.equal((second.address() as net.AddressInfo).port, port);
    await assert.rejects(listenInNetns(net.createServer(), ns.path, { host: '127.0.0.1', port, reusePort: false }), {
      code: 'EADDRINUSE',
    });
  });

  test('IP_FREEBIND with IP_TRANSPARENT: a connect binds a source address the netns does not have (spoofing); without them, EADDRNOTAVAIL', async () => {
    const server = track(net.createServer((s) => s.end(s.remoteAddress ?? '?')));
    await listenInNetns(server, ns.path, { host: '127.0.0.1', port: 0 });
    const { port } = server.address() as net.AddressInfo;
    const plain = track(tcpSocketInNetns(ns.path, 4));
    plain.on('error', () => undefined);
    plain.connect({ port, host: '127.0.0.1', localAddress: '192.0.2.9' });
    const [e] = (await once(plain, 'error').catch((err: unknown) => [err])) as [NodeJS.ErrnoException];
    assert.equal(e.code, 'EADDRNOTAVAIL');
    // The SYN leaves from the spoofed address (nothing routes the answer back here: the pod rules do that).
    const spoofing = track(tcpSocketInNetns(ns.path, 4, { transparent: true, freebind: true }));
    spoofing.on('error', () => undefined);
    const attempt = once(spoofing, 'connectionAttempt');
    spoofing.connect({ port, host: '127.0.0.1', localAddress: '192.0.2.9' });
    await attempt;
    assert.match(await ns.exec('ss', ['-tanH', 'state', 'syn-sent']), /192\.0\.2\.9:\d+\s+127\.0\.0\.1:/);
  });

  test('UDP (for DNS on 15053): a datagram sent inside the netns reaches the socket bound there; ss shows its mark', async () => {
    const socket = track(await udpSocketInNetns(ns.path, { host: '127.0.0.1', port: 0, mark: ZTUNNEL_MARK }));
    const { port } = socket.address();
    const received = once(socket, 'message') as Promise<[Buffer, dgram.RemoteInfo]>;
    await ns.exec('bash', ['-c', `printf query > /dev/udp/127.0.0.1/${port}`]);
    const [data] = await received;
    assert.equal(data.toString(), 'query');
    assert.match(await ssLine(ns, '-u', `127.0.0.1:${port}`), /fwmark:0x539/);
    const v6 = track(await udpSocketInNetns(ns.path, { host: '::1', port }));
    assert.equal(v6.address().family, 'IPv6'); // IPv6-only, so it shares the port number with the IPv4 socket
  });

  test('SO_ORIGINAL_DST with no NAT in the netns: conntrack has no entry, ENOENT', async () => {
    const server = track(replyingServer('pod'));
    await listenInNetns(server, ns.path, { host: '127.0.0.1', port: 0 });
    const { port } = server.address() as net.AddressInfo;
    assert.equal(await readAll(track(tcpSocketInNetns(ns.path, 4)), port, '127.0.0.1'), 'pod ENOENT');
  });

  test('SO_ORIGINAL_DST and IP6T_SO_ORIGINAL_DST: the destination a client dialled before iptables REDIRECT', async () => {
    const server4 = track(replyingServer('v4'));
    await listenInNetns(server4, ns.path, { host: '127.0.0.1', port: 0 });
    const { port } = server4.address() as net.AddressInfo;
    const server6 = track(replyingServer('v6'));
    await listenInNetns(server6, ns.path, { host: '::1', port });
    await ns.exec('iptables', [
      '-t',
      'nat',
      '-A',
      'OUTPUT',
      '-p',
      'tcp',
      '-d',
      '127.86.0.5',
      '--dport',
      '80',
      '-j',
      'REDIRECT',
      '--to-ports',
      String(port),
    ]);
    await ns.exec('ip6tables', [
      '-t',
      'nat',
      '-A',
      'OUTPUT',
      '-p',
      'tcp',
      '-d',
      '::1',
      '--dport',
      '80',
      '-j',
      'REDIRECT',
      '--to-ports',
      String(port),
    ]);

    assert.equal(await readAll(track(tcpSocketInNetns(ns.path, 4)), 80, '127.86.0.5'), 'v4 127.86.0.5:80');
    assert.equal(await readAll(track(tcpSocketInNetns(ns.path, 6)), 80, '::1'), 'v6 ::1:80');
    // Conntrack now tracks the namespace: a connection the rule does not match reports its own destination.
    assert.equal(await readAll(track(tcpSocketInNetns(ns.path, 4)), port, '127.0.0.1'), `v4 127.0.0.1:${port}`);
  });
});
