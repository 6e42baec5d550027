import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import type { Readable } from 'node:stream';
import { H2Session } from '../src/h2/h2-session.js';
import type { H2Stream } from '../src/h2/h2-stream.js';
import type { RequestHead, ResponseHead } from '../src/h2/message-headers.js';
import { H2ErrorCode } from '../src/h2/frame.js';
import { isMeshError } from '../src/lib/errors.js';
import { meshErrorFromH2 } from '../src/ztunnel/proxy/mesh-error-from-h2.js';
import { sessionPair, useHboneTls } from './helpers/h2-tls.js';

const HOST = '127.105.0.1';

/** Everything a stream's readable side delivers up to END_STREAM (without destroying it, as async iteration would). */
async function readAll(r: Readable): Promise<Buffer> {
  const parts: Buffer[] = [];
  r.on('data', (c: Buffer) => parts.push(c));
  r.resume();
  await once(r, 'end');
  return Buffer.concat(parts);
}

/** Streams in these tests are torn down with their connections; tests that expect an error wait for it. */
const quiet = (s: H2Stream): H2Stream => s.on('error', () => undefined);
const nextStream = async (server: H2Session): Promise<[H2Stream, RequestHead]> => {
  const [s, head] = (await once(server, 'stream')) as [H2Stream, RequestHead];
  return [quiet(s), head];
};
const closed = async (s: H2Stream): Promise<void> => {
  if (!s.closed) await once(s, 'close');
};
const responseOf = async (s: H2Stream): Promise<ResponseHead> => ((await once(s, 'response')) as [ResponseHead])[0];
const pattern = (n: number, seed: number): Buffer =>
  Buffer.from(Array.from({ length: n }, (_, i) => (i * 31 + seed) & 0xff));

describe('H2Session over real TLS 1.3 (both roles are ours)', () => {
  const ctx = useHboneTls(HOST);

  test('a CONNECT stream carries bytes both ways with half-close in each direction (END_STREAM <-> end())', async () => {
    const { client, server, clientSocket } = await sessionPair(ctx.fx, ctx.server, HOST);
    assert.equal(clientSocket.getProtocol(), 'TLSv1.3');
    assert.equal(clientSocket.alpnProtocol, 'h2');
    const up = pattern(3 * 1024 * 1024 + 17, 1);
    const down = pattern(2 * 1024 * 1024 + 5, 2);
    const c = quiet(client.connect('10.0.0.1:8080', [['baggage', 'k8s.pod.name=a']]));
    const [s, head] = await nextStream(server);
    assert.deepEqual(head, {
      method: 'CONNECT',
      authority: '10.0.0.1:8080',
      scheme: undefined,
      path: undefined,
      fields: [['baggage', 'k8s.pod.name=a']],
    });
    s.respond(200);
    assert.equal((await responseOf(c)).status, 200);
    const serverGot = readAll(s);
    c.end(up);
    assert.equal((await serverGot).compare(up), 0, 'server read every byte, then END_STREAM ended its readable side');
    assert.equal(s.writable, true, 'the server can still send after the client half-closed');
    const clientGot = readAll(c);
    s.end(down);
    assert.equal((await clientGot).compare(down), 0);
    await Promise.all([closed(c), closed(s)]);
    assert.equal(client.openStreams, 0);
    assert.equal(server.openStreams, 0);
    client.close();
    await Promise.all([once(client, 'close'), once(server, 'close')]);
  });

  test('a stream whose reader stops holds its sender at its window while another stream on the connection proceeds', async () => {
    const window = 65_535;
    const { client, server } = await sessionPair(ctx.fx, ctx.server, HOST, {}, { streamWindowSize: window });
    const slow = quiet(client.connect('10.0.0.1:1'));
    const [slowServer] = await nextStream(server);
    slowServer.respond(200);
    slowServer.pause();
    const big = pattern(4 * 1024 * 1024, 3);
    let slowWritten = false;
    slow.write(big, () => (slowWritten = true));
    const fast = quiet(client.connect('10.0.0.1:2'));
    const [fastServer] = await nextStream(server);
    fastServer.respond(200);
    const fastGot = readAll(fastServer);
    fast.end(big);
    assert.equal((await fastGot).length, big.length, 'the other stream finished');
    assert.equal(slowWritten, false, 'the stalled stream still waits for window');
    assert.ok(
      slowServer.readableLength <= window + slowServer.readableHighWaterMark,
      `buffered ${slowServer.readableLength}`,
    );
    const slowGot = readAll(slowServer);
    slow.end();
    assert.equal((await slowGot).compare(big), 0, 'once read, the stalled stream delivers everything');
    client.destroy();
    await once(server, 'close');
  });

  test('PING is answered with an ACK (keepalive)', async () => {
    const { client, server } = await sessionPair(ctx.fx, ctx.server, HOST);
    await client.ping();
    await server.ping();
    client.destroy();
    await once(server, 'close');
  });

  test('graceful GOAWAY from the server: no new streams, the open one completes, then both ends close', async () => {
    const { client, server } = await sessionPair(ctx.fx, ctx.server, HOST);
    const c = quiet(client.connect('10.0.0.1:8080'));
    const [s] = await nextStream(server);
    s.respond(200);
    const goaway = once(client, 'goaway');
    server.close();
    assert.deepEqual((await goaway).slice(0, 2), [H2ErrorCode.NO_ERROR, 1]);
    assert.throws(
      () => client.connect('10.0.0.1:8080'),
      (e) => isMeshError(meshErrorFromH2(e), 'H2_ERR_REFUSED_STREAM'),
    );
    const clientGot = readAll(c);
    const serverGot = readAll(s);
    c.end('after goaway');
    s.end('still served');
    assert.equal((await serverGot).toString(), 'after goaway');
    assert.equal((await clientGot).toString(), 'still served');
    const [clientClose, serverClose] = await Promise.all([once(client, 'close'), once(server, 'close')]);
    assert.deepEqual([clientClose[0], serverClose[0]], [undefined, undefined]);
  });

  test('a stream destroyed by its owner is reset on the wire (CANCEL), which ends the peer stream without an error; the connection stays up', async () => {
    const { client, server } = await sessionPair(ctx.fx, ctx.server, HOST);
    const c = quiet(client.connect('10.0.0.1:8080'));
    const [s] = await nextStream(server);
    s.respond(200);
    await responseOf(c);
    c.destroy();
    await once(s, 'close');
    assert.equal(s.resetCode, H2ErrorCode.CANCEL);
    assert.equal(s.errored, null, 'CANCEL is the peer choosing to stop, not a failure');
    const c2 = quiet(client.connect('10.0.0.1:8080'));
    const [s2] = await nextStream(server);
    s2.respond(200);
    assert.equal((await responseOf(c2)).status, 200);
    client.destroy();
    await once(server, 'close');
  });

  test('the peer concurrency limit (SETTINGS_MAX_CONCURRENT_STREAMS) refuses a stream locally, before it is sent', async () => {
    const { client, server } = await sessionPair(ctx.fx, ctx.server, HOST, {}, { maxConcurrentStreams: 1 });
    assert.equal(client.remoteSettings.maxConcurrentStreams, 1);
    quiet(client.connect('10.0.0.1:1'));
    assert.throws(
      () => client.connect('10.0.0.1:2'),
      (e) => isMeshError(meshErrorFromH2(e), 'H2_ERR_REFUSED_STREAM'),
    );
    await nextStream(server);
    client.destroy();
    await once(server, 'close');
  });

  test('a header block larger than the peer frame size crosses CONTINUATION frames intact', async () => {
    const { client, server } = await sessionPair(
      ctx.fx,
      ctx.server,
      HOST,
      { maxFrameSize: 16_384 },
      { maxFrameSize: 16_384 },
    );
    const big = 'v'.repeat(40_000);
    quiet(client.connect('10.0.0.1:8080', [['x-big', big]]));
    const [, head] = await nextStream(server);
    assert.equal(head.fields[0]?.[1], big);
    client.destroy();
    await once(server, 'close');
  });

  test('writes a stream buffered while one was in progress leave as one socket write, every byte in order', async () => {
    const { client, server, clientSocket } = await sessionPair(ctx.fx, ctx.server, HOST);
    const c = quiet(client.connect('10.0.0.1:8080'));
    const [s] = await nextStream(server);
    s.respond(200);
    await responseOf(c);
    const total = 70_000 + 5 + 300_000;
    let received = 0;
    const allIn = new Promise<void>((resolve) =>
      s.on('data', (d: Buffer) => (received += d.length) === total && resolve()),
    );
    const serverGot = readAll(s);
    let socketWrites = 0;
    const write = clientSocket._write.bind(clientSocket);
    const writev = clientSocket._writev!.bind(clientSocket);
    clientSocket._write = (chunk, encoding, cb): void => (socketWrites++, write(chunk, encoding, cb));
    clientSocket._writev = (chunks, cb): void => (socketWrites++, writev(chunks, cb));
    // Corking the stream makes Node buffer the writes and hand them over together, as it does while one is pending.
    const parts = [pattern(70_000, 3), pattern(5, 4), pattern(300_000, 5)];
    c.cork();
    for (const p of parts) c.write(p);
    c.uncork();
    await allIn;
    assert.equal(socketWrites, 1, 'three buffered stream writes, one TLS write');
    c.end();
    assert.equal((await serverGot).compare(Buffer.concat(parts)), 0);
    client.destroy();
    await once(server, 'close');
  });

  test('a lost connection fails open streams with H2_ERR_SESSION_CLOSED', async () => {
    const { client, server, clientSocket } = await sessionPair(ctx.fx, ctx.server, HOST);
    const c = quiet(client.connect('10.0.0.1:8080'));
    await nextStream(server);
    const failed = once(c, 'error');
    clientSocket.destroy();
    const [err] = (await failed) as [Error];
    assert.ok(isMeshError(meshErrorFromH2(err), 'H2_ERR_SESSION_CLOSED'), String(err));
    await once(server, 'close');
  });
});
