import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { once } from 'node:events';
import { Duplex } from 'node:stream';
import { UpstreamPool, type PooledRequestOptions } from './upstream-pool.js';

/**
 * A loopback HTTP/1.1 server and a pool whose connections are streams without a socket's methods (no `ref`,
 * `setKeepAlive`), as the proxy's HBONE tunnels are: each wraps a TCP connection in a plain Duplex.
 */
async function setup() {
  const server = http.createServer((_req, res) => res.end('ok'));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as net.AddressInfo).port;
  const tunnels: Duplex[] = [];
  const pool = new UpstreamPool(async (_peer, ip, p) => {
    const s = net.connect(p, ip);
    await once(s, 'connect');
    const t = new Duplex({
      write: (chunk: Buffer, _e, cb) => s.write(chunk, cb),
      read: () => s.resume(),
      final: (cb) => s.end(cb),
      destroy: (e, cb) => {
        s.destroy();
        cb(e);
      },
    });
    s.on('data', (b: Buffer) => {
      if (!t.push(b)) s.pause();
    });
    s.once('end', () => t.push(null));
    tunnels.push(t);
    return t;
  });
  const get = async (maxRequestsPerConnection?: number): Promise<http.ClientRequest> => {
    const options: PooledRequestOptions = {
      agent: pool,
      host: '127.0.0.1',
      port,
      peer: '127.0.0.1',
      path: '/',
      ...(maxRequestsPerConnection === undefined ? {} : { maxRequestsPerConnection }),
    };
    const req = http.request(options);
    req.end();
    const [res] = (await once(req, 'response')) as [http.IncomingMessage];
    res.resume();
    await once(res, 'end');
    return req;
  };
  return { server, pool, get, tunnels };
}

test('a request on a kept-alive tunnel is marked as reused and leaves no error listener behind on it', async () => {
  const { server, pool, get, tunnels } = await setup();
  try {
    const first = await get();
    assert.equal(first.reusedSocket, false);
    const second = await get();
    assert.equal(second.reusedSocket, true, 'a reset on a reused tunnel is retried only when the request says so');
    await new Promise((r) => setImmediate(r));
    const listeners = tunnels[0]!.listenerCount('error');
    for (let i = 0; i < 20; i++) assert.equal((await get()).reusedSocket, true);
    await new Promise((r) => setImmediate(r));
    assert.equal(tunnels.length, 1);
    assert.equal(tunnels[0]!.listenerCount('error'), listeners, 'each reuse adds an error listener to the tunnel');
  } finally {
    pool.destroy();
    server.close();
  }
});

test("a connection carries no more requests than the DestinationRule's maxRequestsPerConnection: then a new one is made", async () => {
  const { server, pool, get, tunnels } = await setup();
  try {
    for (let i = 0; i < 5; i++) await get(2);
    assert.equal(tunnels.length, 3, 'five requests, two a connection');
  } finally {
    pool.destroy();
    server.close();
  }
});
