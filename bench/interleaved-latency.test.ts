import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { once } from 'node:events';
import { interleavedLatency } from './interleaved-latency.js';

const SLOW_ECHO_MS = 300;

/**
 * An echo server on loopback that records, in `order`, which server each message reached; its first `slow`
 * answers are held back SLOW_ECHO_MS, so a counted warm-up ping-pong would show in the percentiles.
 */
async function recordingEcho(name: string, order: string[], slow: number): Promise<net.Server> {
  let answered = 0;
  const server = net.createServer({ noDelay: true }, (s) => {
    s.on('data', (d: Buffer) => {
      order.push(name);
      if (answered++ < slow) setTimeout(() => s.write(d), SLOW_ECHO_MS);
      else s.write(d);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return server;
}

test('interleavedLatency: the paths take turns a block of ping-pongs at a time, and only the rounds after the warm-up are counted', async () => {
  const order: string[] = [];
  const servers = await Promise.all(['a', 'b'].map((n) => recordingEcho(n, order, 5)));
  const sockets = await Promise.all(
    servers.map(async (srv) => {
      const s = net.connect({ host: '127.0.0.1', port: (srv.address() as net.AddressInfo).port, noDelay: true });
      await once(s, 'connect');
      return s;
    }),
  );
  try {
    const result = await interleavedLatency(
      [
        { name: 'a', socket: sockets[0]! },
        { name: 'b', socket: sockets[1]! },
      ],
      20,
      5,
      10,
    );
    // 25 per path in blocks of 10: a×10 b×10 a×10 b×10 a×5 b×5.
    const blocks = [
      ['a', 10],
      ['b', 10],
      ['a', 10],
      ['b', 10],
      ['a', 5],
      ['b', 5],
    ] as const;
    assert.deepEqual(
      order,
      blocks.flatMap(([n, k]) => Array<string>(k).fill(n)),
    );
    assert.deepEqual([...result.keys()], ['a', 'b']);
    for (const p of result.values())
      assert.ok(p.p50 > 0 && p.p50 <= p.p99 && p.p99 <= p.p999 && p.p999 < SLOW_ECHO_MS * 1000, JSON.stringify(p));
  } finally {
    for (const s of sockets) s.destroy();
    for (const srv of servers) srv.close();
  }
});
