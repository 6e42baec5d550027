import { test } from 'node:test';
import assert from 'node:assert/strict';
import { netnsSkip, withNetns } from './helpers/netns.js';

const SOCKET_FACTORY = new URL('../src/ztunnel/proxy/socket-factory.js', import.meta.url).href;
const NATIVE = new URL('../src/native/native.js', import.meta.url).href;

/**
 * Runs inside a namespace whose ephemeral range is one port: two listeners, then one connection to each from the
 * same local address, through ztunnel's local socket factory and through the in-pod socket maker. Prints how each
 * second connection fared. With the port chosen at bind, the second bind finds the only port taken (EADDRINUSE);
 * chosen at connect, the same port serves both, since the 4-tuples differ.
 */
const CHILD = `
import net from 'node:net';
import { once } from 'node:events';
import { LocalSocketFactory } from ${JSON.stringify(SOCKET_FACTORY)};
import { tcpSocketInNetns } from ${JSON.stringify(NATIVE)};
const servers = [];
for (const port of [9001, 9002, 9003, 9004]) {
  const s = net.createServer((c) => c.on('error', () => undefined));
  s.listen(port, '127.0.0.1');
  await once(s, 'listening');
  servers.push(s);
}
const result = {};
const factory = new LocalSocketFactory();
const a = await factory.connect('127.0.0.1', 9001, '127.0.0.1');
try {
  const b = await factory.connect('127.0.0.1', 9002, '127.0.0.1');
  result.factory = { first: a.localPort, second: b.localPort };
  b.destroy();
} catch (e) {
  result.factory = { error: e.message };
}
a.destroy();
const connectInPod = async (port) => {
  const s = tcpSocketInNetns('/proc/self/ns/net', 4);
  s.connect({ host: '127.0.0.1', port, localAddress: '127.0.0.1' });
  await once(s, 'connect');
  return s;
};
const c = await connectInPod(9003);
try {
  const d = await connectInPod(9004);
  result.inPod = { first: c.localPort, second: d.localPort };
  d.destroy();
} catch (e) {
  result.inPod = { error: e.message };
}
c.destroy();
for (const s of servers) s.close();
console.log(JSON.stringify(result));
`;

test(
  'sockets that connect from a chosen address pick their port at connect (IP_BIND_ADDRESS_NO_PORT): one free port serves connections to two destinations, in local mode and in a pod',
  { skip: netnsSkip() },
  async () => {
    await withNetns(1, async (ns) => {
      await ns.exec('sysctl', ['-q', '-w', 'net.ipv4.ip_local_port_range=40000 40000']);
      const out = await ns.exec(process.execPath, [...process.execArgv, '--input-type=module', '-e', CHILD]);
      const result = JSON.parse(out.trim()) as Record<string, unknown>;
      assert.deepEqual(result, { factory: { first: 40000, second: 40000 }, inPod: { first: 40000, second: 40000 } });
    });
  },
);
