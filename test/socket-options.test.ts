import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import net from 'node:net';
import { KEEPALIVE_TIME_MS, LocalSocketFactory } from '../src/ztunnel/proxy/socket-factory.js';
import { pythonSkip, runPython } from './helpers/python.js';

const HOST = '127.0.102.1';

/** Reading another process's socket options takes pidfd_getfd on this process, which needs ptrace rights over it. */
function skip(): false | string {
  if (process.getuid?.() !== 0) return 'reading this process\'s sockets from python3 (pidfd_getfd) needs root; CI runs as root';
  return pythonSkip('socket', 'python3');
}

/** TCP_NODELAY and keepalive as the kernel holds them for `s` (test/interop/socket_options.py). */
async function kernelOptions(s: net.Socket): Promise<{ nodelay: number; keepalive: number; keepidle: number }> {
  const fd = (s as unknown as { _handle: { fd: number } })._handle.fd;
  const r = await runPython('socket_options.py', [String(process.pid), String(fd)]);
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout) as { nodelay: number; keepalive: number; keepidle: number };
}

test('ztunnel\'s outbound sockets carry TCP_NODELAY and keepalive after 180s, from a chosen address or not (Node ignores both as connect() options)', { skip: skip() }, async () => {
  const server = net.createServer((c) => c.on('error', () => undefined));
  server.listen(0, HOST);
  await once(server, 'listening');
  const { port } = server.address() as net.AddressInfo;
  try {
    for (const from of [undefined, HOST]) {
      const s = await new LocalSocketFactory().connect(HOST, port, from);
      try {
        const o = await kernelOptions(s);
        assert.deepEqual({ nodelay: o.nodelay, keepalive: o.keepalive, keepidle: o.keepidle }, { nodelay: 1, keepalive: 1, keepidle: KEEPALIVE_TIME_MS / 1000 }, `from ${from ?? 'any address'}`);
      } finally {
        s.destroy();
      }
    }
  } finally {
    server.close();
  }
});
