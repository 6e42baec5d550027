import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import tls from 'node:tls';
import { once } from 'node:events';
import { startEchoServer } from '../src/echo/echo-server.js';
import { socks5Connect } from '../src/echo/socks5-client.js';
import { HANDSHAKE_TIMEOUT_MS } from '../src/ztunnel/proxy/socks5.js';
import { meshFixture, sendAndCollect, type MeshFixture } from './helpers/mesh-fixture.js';
import { clientTlsOptions, serverTlsOptions } from '../src/ztunnel/tls/workload-tls.js';
import { startZtunnel } from './helpers/in-process.js';
import { eventAfter } from './helpers/fs-events.js';
import { RawPeer } from './helpers/h2-raw-peer.js';

const MESH = `
workloads:
- {uid: c, name: client, namespace: a, serviceAccount: client, workloadIps: [127.33.0.1], protocol: HBONE, node: n1}
- {uid: s, name: server, namespace: b, serviceAccount: server, workloadIps: [127.33.0.2], protocol: HBONE, node: n1}
- {uid: r, name: rogue, namespace: b, serviceAccount: rogue, workloadIps: [127.33.0.3], protocol: HBONE, node: n2}
`;

const CLIENT_IP = '127.33.0.1';
const SERVER_IP = '127.33.0.2';
const ROGUE_IP = '127.33.0.3';
const CLIENT_ID = 'spiffe://cluster.local/ns/a/sa/client';
const SERVER_ID = 'spiffe://cluster.local/ns/b/sa/server';

const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');
/** HTTP/2 frame types and flags (RFC 9113 §6) and the error code a raw peer expects. */
const HEADERS = 0x1;
const RST_STREAM = 0x3;
const SETTINGS_TYPE = 0x4;
const GOAWAY = 0x7;
const END_HEADERS = 0x4;
const SETTINGS_MAX_CONCURRENT_STREAMS = 0x3;
const REFUSED_STREAM = 0x7;
/** An HTTP/2 frame header plus payload. */
const frame = (type: number, flags: number, streamId: number, payload: Buffer): Buffer => {
  const h = Buffer.alloc(9);
  h.writeUIntBE(payload.length, 0, 3);
  h[3] = type;
  h[4] = flags;
  h.writeUInt32BE(streamId, 5);
  return Buffer.concat([h, payload]);
};
const SETTINGS = frame(SETTINGS_TYPE, 0, 0, Buffer.alloc(0));

/**
 * A CONNECT header block encoded by hand (RFC 7541), not by our encoder: each field a literal without indexing
 * whose name is a static-table index (:authority 1, :method 2) and whose value is a plain string.
 */
function connectBlock(authority: string): Buffer {
  const literal = (nameIndex: number, value: string): Buffer =>
    Buffer.concat([Buffer.from([nameIndex, value.length]), Buffer.from(value, 'latin1')]);
  return Buffer.concat([literal(2, 'CONNECT'), literal(1, authority)]);
}
/** The first field of a response block that is `:status: 200` as a static-table index (RFC 7541 Appendix A, 8). */
const STATUS_200 = 0x88;

/** The value of `id` in a SETTINGS frame's payload, if it is there. */
function setting(payload: Buffer, id: number): number | undefined {
  for (let o = 0; o + 6 <= payload.length; o += 6)
    if (payload.readUInt16BE(o) === id) return payload.readUInt32BE(o + 2);
  return undefined;
}

/** An mTLS connection to the server workload's HBONE port, as the client workload. */
async function mtlsToServer(fx: MeshFixture): Promise<tls.TLSSocket> {
  const tcp = net.connect({ host: SERVER_IP, port: 15008, localAddress: CLIENT_IP });
  await once(tcp, 'connect');
  const t = tls.connect({ ...clientTlsOptions(await fx.cert(CLIENT_ID), [SERVER_ID]), socket: tcp });
  t.on('error', () => undefined);
  await once(t, 'secureConnect');
  return t;
}

/**
 * How the HBONE server ends a connection after a connection error: a GOAWAY frame, or closing it (for a client
 * that never sent the preface). A server that does neither fails the test by its timeout.
 */
function serverAnswer(t: net.Socket): Promise<'goaway' | 'closed'> {
  return new Promise((resolve) => {
    let buf = Buffer.alloc(0);
    t.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      for (let o = 0; o + 9 <= buf.length; o += 9 + buf.readUIntBE(o, 3)) if (buf[o + 3] === GOAWAY) resolve('goaway');
    });
    t.once('close', () => resolve('closed'));
  });
}

/** A SOCKS5 -> HBONE -> echo connection opened before the abuse, to show it is not disturbed. */
async function liveConnection(): Promise<{ socket: net.Socket; stillEchoes: () => Promise<void> }> {
  const socket = await socks5Connect(CLIENT_IP, 15080, SERVER_IP, 8080, CLIENT_IP);
  socket.resume();
  return {
    socket,
    stillEchoes: async () => {
      const echoed = once(socket, 'data');
      socket.write('survived');
      assert.equal(String((await echoed)[0]), 'survived');
    },
  };
}

async function works(): Promise<void> {
  const s = await socks5Connect(CLIENT_IP, 15080, SERVER_IP, 8080, CLIENT_IP);
  assert.equal((await sendAndCollect(s, 'still alive')).toString(), 'still alive');
}

test('garbage TLS, a stream flood, a silent SOCKS5 client and an invalid config edit neither crash nor disturb other connections', async (t) => {
  const fx = await meshFixture();
  await fx.write('mesh.yaml', MESH);
  const echo = await startEchoServer(SERVER_IP, 8080);
  const zt = await startZtunnel(fx.file('mesh.yaml'), 'n1', fx.ca, { POOL_UNUSED_RELEASE_TIMEOUT: '1h' });
  try {
    // A live connection that must survive everything below.
    const live = await liveConnection();

    // Garbage instead of a TLS ClientHello.
    const g = net.connect({ host: SERVER_IP, port: 15008 });
    g.on('error', () => undefined);
    await once(g, 'connect');
    g.write(Buffer.from('GET / HTTP/1.1\r\nHost: not-tls\r\n\r\n'));
    await once(g, 'close');

    // A flood of CONNECTs on one HBONE connection from a raw peer that ignores the server's
    // SETTINGS_MAX_CONCURRENT_STREAMS: streams up to the limit are answered 200, each one past it is refused with
    // RST_STREAM(REFUSED_STREAM) (RFC 9113 §5.1.2), and the connection itself stays up.
    const flooder = new RawPeer(await mtlsToServer(fx));
    flooder.send(PREFACE, SETTINGS);
    const serverSettings = await flooder.frame((f) => f.type === SETTINGS_TYPE && (f.flags & 1) === 0, 'SETTINGS');
    const limit = setting(serverSettings.payload, SETTINGS_MAX_CONCURRENT_STREAMS);
    assert.equal(limit, 200, "ztunnel's server stream limit (ztunnel src/proxy/h2/server.rs)");
    const ids = Array.from({ length: 2 * limit }, (_, i) => 2 * i + 1);
    const block = connectBlock(`${SERVER_IP}:8080`);
    flooder.send(...ids.map((id) => frame(HEADERS, END_HEADERS, id, block)));
    const answers = await Promise.all(
      ids.map((id) =>
        flooder.frame(
          (f) => f.streamId === id && (f.type === HEADERS || f.type === RST_STREAM),
          `an answer on stream ${id}`,
        ),
      ),
    );
    const accepted = answers.filter((f) => f.type === HEADERS);
    assert.equal(accepted.length, limit, 'streams answered');
    assert.deepEqual(
      accepted.filter((f) => f.payload[0] !== STATUS_200).map((f) => f.streamId),
      [],
      'answers other than 200',
    );
    assert.deepEqual(
      accepted.map((f) => f.streamId),
      ids.slice(0, limit),
      'the first streams are the accepted ones',
    );
    assert.deepEqual(
      answers.filter((f) => f.type === RST_STREAM).map((f) => f.payload.readUInt32BE(0)),
      Array<number>(limit).fill(REFUSED_STREAM),
      'every stream past the limit is refused',
    );
    assert.equal(
      flooder.frames.find((f) => f.type === GOAWAY),
      undefined,
      'the connection was not failed',
    );
    flooder.socket.destroy();

    // An invalid config edit is rejected and the last good config stays in force (the rejection itself, awaited
    // on the watcher's event, is pinned in local-config-watcher.test.ts); the valid edit after it must be applied,
    // so a watcher that never fires fails here instead of passing on an unchanged state.
    await fx.write('mesh.yaml', MESH + '\n  bogus: [\n');
    assert.equal(zt.ctx.state.workloadByUid('s')?.name, 'server');
    await eventAfter(zt.ctx.state, 'change', () =>
      fx.write('mesh.yaml', MESH.replace('name: rogue,', 'name: rogue-2,')),
    );
    assert.equal(zt.ctx.state.workloadByUid('r')?.name, 'rogue-2');
    assert.equal(zt.ctx.state.workloadByUid('s')?.name, 'server');

    await live.stillEchoes();
    await works();

    // A SOCKS5 client that connects and sends nothing is dropped after the handshake timeout, not held forever;
    // ztunnel's clock is mocked from here on. A full SOCKS5 connection after it shows its handshake (and timer)
    // has started: the listener accepts in order.
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const silent = net.connect({ host: CLIENT_IP, port: 15080, localAddress: CLIENT_IP });
    silent.on('error', () => undefined);
    await once(silent, 'connect');
    const silentClosed = once(silent, 'close');
    await works();
    assert.equal(silent.destroyed, false, 'the silent client is held until the timeout');
    t.mock.timers.tick(HANDSHAKE_TIMEOUT_MS);
    await silentClosed;
    live.socket.end();
  } finally {
    t.mock.timers.reset();
    await zt.shutdown();
    await echo.close();
    await fx.cleanup();
  }
});

test('malformed HTTP/2 from an authenticated HBONE peer, either side, fails only that connection', async () => {
  const fx = await meshFixture();
  await fx.write('mesh.yaml', MESH);
  const echo = await startEchoServer(SERVER_IP, 8080);
  // A peer ztunnel on "n2" with a valid certificate for its workload that answers every connection with junk frames.
  const rogueCert = await fx.cert('spiffe://cluster.local/ns/b/sa/rogue');
  const rogue = tls.createServer(serverTlsOptions(rogueCert), (s) => {
    s.on('error', () => undefined);
    s.end(Buffer.concat([SETTINGS, frame(0x0, 0, 0, Buffer.from('DATA on stream 0')), Buffer.alloc(64, 0xff)]));
  });
  rogue.listen(15008, ROGUE_IP);
  await once(rogue, 'listening');
  const zt = await startZtunnel(fx.file('mesh.yaml'), 'n1', fx.ca, { POOL_UNUSED_RELEASE_TIMEOUT: '1h' });
  try {
    const live = await liveConnection();
    // Server side, after a good mTLS handshake: no preface at all; a preface then a frame that breaks the protocol
    // (DATA on stream 0); a frame over SETTINGS_MAX_FRAME_SIZE; HEADERS that are not HPACK. Each is a connection
    // error: the server answers GOAWAY at once (or closes, for the missing preface).
    for (const junk of [
      Buffer.from('GET / HTTP/1.1\r\n\r\n'),
      Buffer.concat([PREFACE, SETTINGS, frame(0x0, 0, 0, Buffer.from('x'))]),
      Buffer.concat([PREFACE, SETTINGS, Buffer.from([0xff, 0xff, 0xff, 0x0, 0x0, 0, 0, 0, 1]), Buffer.alloc(64)]),
      Buffer.concat([PREFACE, SETTINGS, frame(HEADERS, END_HEADERS, 1, Buffer.alloc(32, 0xff))]),
    ]) {
      const t = await mtlsToServer(fx);
      const answer = serverAnswer(t);
      t.write(junk);
      assert.match(await answer, /^(goaway|closed)$/, `answer to ${junk.subarray(0, 40).toString('latin1')}`);
      t.destroy();
    }
    // Client side: the SOCKS5 connection bound for the rogue peer fails; nothing else does.
    const toRogue = await socks5Connect(CLIENT_IP, 15080, ROGUE_IP, 8080, CLIENT_IP).then(
      (s) =>
        new Promise<string>((resolve) => {
          s.on('error', () => undefined);
          s.once('close', () => resolve('closed'));
          s.resume();
          s.write('hello?');
        }),
      (e: unknown) => `refused: ${e instanceof Error ? e.message : String(e)}`,
    );
    // The CONNECT never gets a response, so the SOCKS5 client is refused before any byte is relayed.
    assert.match(toRogue, /^refused: .*general failure/);

    await live.stillEchoes();
    await works();
    live.socket.end();
  } finally {
    await zt.shutdown();
    rogue.close();
    await echo.close();
    await fx.cleanup();
  }
});

test('SIGTERM-style shutdown drains a live connection until CONNECTION_TERMINATION_DEADLINE, then closes it', async (t) => {
  const fx = await meshFixture();
  await fx.write('mesh.yaml', MESH);
  const echo = await startEchoServer(SERVER_IP, 8080);
  const zt = await startZtunnel(fx.file('mesh.yaml'), 'n1', fx.ca, { CONNECTION_TERMINATION_DEADLINE: '5s' });
  try {
    const live = await socks5Connect(CLIENT_IP, 15080, SERVER_IP, 8080, CLIENT_IP);
    live.on('error', () => undefined);
    live.resume();
    const echoes = async (text: string): Promise<void> => {
      const echoed = once(live, 'data');
      live.write(text);
      assert.equal(String((await echoed)[0]), text);
    };
    await echoes('before');
    let closed = false;
    const ended = new Promise<void>((resolve) => {
      live.once('end', resolve);
      live.once('close', resolve);
    }).then(() => (closed = true));
    // ztunnel's clock is mocked from the shutdown on: the drain's deadline passes when the test says so.
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const done = zt.shutdown();
    // New connections are refused at once; the live one still carries bytes until the deadline.
    await assert.rejects(socks5Connect(CLIENT_IP, 15080, SERVER_IP, 8080, CLIENT_IP));
    t.mock.timers.tick(4999);
    await echoes('draining');
    assert.equal(closed, false, 'closed before the deadline');
    t.mock.timers.tick(1);
    await ended;
    await done;
  } finally {
    t.mock.timers.reset();
    await echo.close();
    await fx.cleanup();
  }
});
