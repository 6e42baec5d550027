import { test } from 'node:test';
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import net from 'node:net';
import { once } from 'node:events';
import { Http2UpstreamPool } from './http2-upstream-pool.js';

/** An h2c server on loopback that answers with how many connections it has taken, and a pool that dials it. */
async function setup(idleMs?: number) {
  let connections = 0;
  const server = http2.createServer((_req, res) => res.end(String(connections)));
  server.on('connection', () => connections++);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as net.AddressInfo).port;
  let opened = 0;
  const pool = new Http2UpstreamPool(async () => {
    opened++;
    const s = net.connect(port, '127.0.0.1');
    await once(s, 'connect');
    return s;
  }, idleMs);
  const get = async (): Promise<string> => {
    const session = await pool.session('client', '127.0.0.1', port);
    const stream = session.request({ ':path': '/' });
    let body = '';
    stream.setEncoding('utf8');
    stream.on('data', (c: string) => (body += c));
    await once(stream, 'end');
    return body;
  };
  return { server, pool, get, opened: () => opened };
}

test('requests to one endpoint share one HTTP/2 session over one tunnel, made once even when asked for at once', async () => {
  const { server, pool, get, opened } = await setup();
  assert.deepEqual(await Promise.all([get(), get(), get()]), ['1', '1', '1']);
  assert.equal(await get(), '1');
  assert.equal(opened(), 1);
  pool.destroy();
  server.close();
});

test('a session that ends is let go, and the next request opens a new tunnel', async () => {
  const { server, pool, get, opened } = await setup();
  assert.equal(await get(), '1');
  const session = await pool.session('client', '127.0.0.1', (server.address() as net.AddressInfo).port);
  session.close();
  await once(session, 'close');
  assert.equal(await get(), '2');
  assert.equal(opened(), 2);
  pool.destroy();
  server.close();
});

test('a session idle past its time is closed and let go', async () => {
  const { server, pool, get, opened } = await setup(50);
  assert.equal(await get(), '1');
  const session = await pool.session('client', '127.0.0.1', (server.address() as net.AddressInfo).port);
  await once(session, 'close');
  assert.equal(await get(), '2');
  assert.equal(opened(), 2);
  pool.destroy();
  server.close();
});
