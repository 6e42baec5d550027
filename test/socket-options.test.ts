import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import net from 'node:net';
import { pino } from 'pino';
import { AcceptingListener } from '../src/ztunnel/proxy/accepting-listener.js';
import { OUTBOUND_CAPTURE_PORT } from '../src/lib/istio-ports.js';
import { KEEPALIVE_TIME_MS, LocalSocketFactory } from '../src/ztunnel/proxy/socket-factory.js';
import { socks5Connect } from '../src/echo/socks5-client.js';
import { pythonSkip, runPython } from './helpers/python.js';

const HOST = '127.102.0.1';

/** Reading another process's socket options takes pidfd_getfd on this process, which needs ptrace rights over it. */
function skip(): false | string {
  if (process.getuid?.() !== 0)
    return "reading this process's sockets from python3 (pidfd_getfd) needs root; CI runs as root";
  return pythonSkip('socket', 'python3');
}

/** TCP_NODELAY and keepalive as the kernel holds them for `s` (test/interop/socket_options.py). */
async function kernelOptions(s: net.Socket): Promise<{ nodelay: number; keepalive: number; keepidle: number }> {
  const fd = (s as unknown as { _handle: { fd: number } })._handle.fd;
  const r = await runPython('socket_options.py', [String(process.pid), String(fd)]);
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout) as { nodelay: number; keepalive: number; keepidle: number };
}

test(
  "ztunnel's outbound sockets carry TCP_NODELAY and keepalive after 180s, from a chosen address or not (Node ignores both as connect() options)",
  { skip: skip() },
  async () => {
    const server = net.createServer((c) => c.on('error', () => undefined));
    server.listen(0, HOST);
    await once(server, 'listening');
    const { port } = server.address() as net.AddressInfo;
    try {
      for (const from of [undefined, HOST]) {
        const s = await new LocalSocketFactory().connect(HOST, port, from);
        try {
          const o = await kernelOptions(s);
          assert.deepEqual(
            { nodelay: o.nodelay, keepalive: o.keepalive, keepidle: o.keepidle },
            { nodelay: 1, keepalive: 1, keepidle: KEEPALIVE_TIME_MS / 1000 },
            `from ${from ?? 'any address'}`,
          );
        } finally {
          s.destroy();
        }
      }
    } finally {
      server.close();
    }
  },
);

test(
  'sockets the outbound-capture and inbound-passthrough listeners accept carry TCP_NODELAY and keepalive after 180s, as ztunnel sets them',
  { skip: skip() },
  async () => {
    let take: (s: net.Socket) => void = () => undefined;
    const accepted = new Promise<net.Socket>((resolve) => (take = resolve));
    const listener = new AcceptingListener(
      { log: pino({ level: 'silent' }), sockets: new LocalSocketFactory() },
      'test capture',
      HOST,
      OUTBOUND_CAPTURE_PORT,
      (s) => {
        take(s);
        return Promise.resolve();
      },
    );
    await listener.start();
    const client = net.connect(OUTBOUND_CAPTURE_PORT, HOST);
    try {
      const o = await kernelOptions(await accepted);
      assert.deepEqual(
        { nodelay: o.nodelay, keepalive: o.keepalive, keepidle: o.keepidle },
        { nodelay: 1, keepalive: 1, keepidle: KEEPALIVE_TIME_MS / 1000 },
      );
    } finally {
      client.destroy();
      listener.close(true);
    }
  },
);

test(
  "the SOCKS5 client (the bench's and the demo's load generator) connects with TCP_NODELAY, from a chosen address or not",
  { skip: skip() },
  async () => {
    // A SOCKS5 server that accepts any CONNECT (RFC 1928): no-auth greeting, then a success reply.
    const server = net.createServer((c) => {
      c.on('error', () => undefined);
      c.once('data', () => {
        c.write(Buffer.from([0x05, 0x00]));
        c.once('data', () => c.write(Buffer.from([0x05, 0x00, 0x00, 0x01, 127, 0, 0, 1, 0, 80])));
      });
    });
    server.listen(0, HOST);
    await once(server, 'listening');
    const { port } = server.address() as net.AddressInfo;
    try {
      for (const from of [undefined, HOST]) {
        const s = await socks5Connect(HOST, port, '127.0.0.1', 80, from);
        try {
          assert.equal((await kernelOptions(s)).nodelay, 1, `from ${from ?? 'any address'}`);
        } finally {
          s.destroy();
        }
      }
    } finally {
      server.close();
    }
  },
);
