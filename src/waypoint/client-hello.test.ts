import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import tls from 'node:tls';
import { once } from 'node:events';
import { peekClientHello } from './client-hello.js';

/** The first bytes a real TLS client (node's, OpenSSL underneath) sends for `servername`. */
async function clientHello(servername: string | undefined): Promise<Buffer> {
  const server = net.createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const got = new Promise<Buffer>((resolve) =>
    server.once('connection', (s) => {
      s.once('data', (d: Buffer) => {
        resolve(d);
        s.destroy();
      });
    }),
  );
  const { port } = server.address() as net.AddressInfo;
  const c = tls.connect({ host: '127.0.0.1', port, ...(servername === undefined ? {} : { servername }) });
  c.on('error', () => undefined);
  const hello = await got;
  c.destroy();
  server.close();
  return hello;
}

test("a real client's ClientHello gives its SNI, whole or in pieces; without SNI, none", async () => {
  const hello = await clientHello('www.shop.test');
  assert.deepEqual(peekClientHello(hello), { t: 'hello', sni: 'www.shop.test' });
  assert.deepEqual(peekClientHello(hello.subarray(0, 3)), { t: 'more' });
  assert.deepEqual(peekClientHello(hello.subarray(0, hello.length - 1)), { t: 'more' });
  assert.deepEqual(peekClientHello(await clientHello(undefined)), { t: 'hello', sni: undefined });
});

test('bytes that are not a TLS handshake are told apart at once', () => {
  assert.deepEqual(peekClientHello(Buffer.from('GET / HTTP/1.1\r\n')), { t: 'not-tls' });
  assert.deepEqual(peekClientHello(Buffer.from([22, 3, 1, 0, 4, 2, 0, 0, 0])), { t: 'not-tls' }, 'not a ClientHello');
});

test('a ClientHello cut short inside its record is read as one without a name, never past its end', () => {
  const record = Buffer.from([22, 3, 1, 0, 6, 1, 0, 0, 2, 3, 3]);
  assert.deepEqual(peekClientHello(record), { t: 'hello', sni: undefined });
});
