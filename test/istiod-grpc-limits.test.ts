import { after, afterEach, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import http2 from 'node:http2';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import type { Istiod } from '../src/istiod/istiod.js';
import type { GrpcLimits } from '../src/istiod/grpc-server.js';
import { startIstiod } from './helpers/in-process.js';

/** istiod's gRPC port (15012) under unauthenticated and idle peers, with small limits so the test sees them act. */
const HOST = '127.78.3.1';
const SERVER_NAME = 'istiod.istio-system.svc';
/** Within the 4 MiB receive limit: without authentication first, istiod would read all of it before answering. */
const BODY_BYTES = 3 * 1024 * 1024;

describe("limits on istiod's gRPC port for unauthenticated and idle peers", () => {
  let dir: string;
  let ist: Istiod | undefined;
  let root: string;
  let istiodLog = '';

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'amesh-grpc-limits-'));
  });
  afterEach(async () => {
    await ist?.stop();
    ist = undefined;
    await rm(path.join(dir, 'state'), { recursive: true, force: true });
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /**
   * An istiod on HOST for one test, with only the limit that test checks made small: a short handshake or keepalive
   * deadline elsewhere would close connections a loaded machine is merely slow to use.
   */
  const startWith = async (limits: Partial<GrpcLimits>): Promise<Istiod> => {
    istiodLog = '';
    ist = await startIstiod(dir, path.join(dir, 'state'), {
      host: HOST,
      log: (l) => (istiodLog += l),
      grpcLimits: limits,
    });
    root = await readFile(ist.rootCertPath, 'utf8');
    return ist;
  };

  const tlsConnect = async (port: number): Promise<tls.TLSSocket> => {
    const s = tls.connect({ host: HOST, port, ca: root, servername: SERVER_NAME, ALPNProtocols: ['h2'] });
    await once(s, 'secureConnect');
    return s;
  };

  for (const method of [
    '/istio.v1.auth.IstioCertificateService/CreateCertificate',
    '/envoy.service.discovery.v3.AggregatedDiscoveryService/DeltaAggregatedResources',
  ]) {
    test(`${method.split('/')[2]!} without a token is refused on its metadata, before its 3 MiB body is read`, async () => {
      const socket = await tlsConnect((await startWith({})).ports.grpc);
      const session = http2.connect(`https://${SERVER_NAME}`, { createConnection: () => socket });
      session.on('error', () => undefined);
      try {
        const stream = session.request({
          ':method': 'POST',
          ':path': method,
          'content-type': 'application/grpc',
          te: 'trailers',
        });
        stream.on('error', () => undefined);
        const frame = Buffer.alloc(5 + BODY_BYTES);
        frame.writeUInt32BE(BODY_BYTES, 1);
        stream.write(frame);
        const [headers] = (await once(stream, 'response')) as [http2.IncomingHttpHeaders];
        const sentWhenAnswered = socket.bytesWritten;
        assert.equal(
          headers['grpc-status'],
          '16',
          `UNAUTHENTICATED, not ${String(headers['grpc-status'])} ${String(headers['grpc-message'])}`,
        );
        assert.equal(decodeURI(String(headers['grpc-message'])), 'request authenticate failure');
        assert.ok(
          sentWhenAnswered < 256 * 1024,
          `answered after ${sentWhenAnswered} bytes were sent: the body was being read`,
        );
        stream.close();
      } finally {
        session.destroy();
      }
    });
  }

  test('a TCP connection that never starts TLS is closed after the handshake timeout, not held for 120 s', async () => {
    const { ports } = await startWith({ handshakeTimeoutMs: 300 });
    const s = net.connect({ host: HOST, port: ports.grpc });
    s.on('error', () => undefined);
    await once(s, 'connect');
    await once(s, 'close');
  });

  test('a TLS connection that never speaks HTTP/2 is closed when it leaves the keepalive PING unanswered', async () => {
    const s = await tlsConnect((await startWith({ keepaliveTimeMs: 200, keepaliveTimeoutMs: 100 })).ports.grpc);
    s.on('error', () => undefined);
    s.resume();
    await once(s, 'close');
  });

  test('an HTTP/2 connection that opens no call is closed (GOAWAY) after the idle timeout', async () => {
    const s = await tlsConnect((await startWith({ idleTimeoutMs: 600 })).ports.grpc);
    const session = http2.connect(`https://${SERVER_NAME}`, { createConnection: () => s });
    session.on('error', () => undefined);
    await once(session, 'close');
  });

  test('connections beyond the cap are closed at accept; those within it stay open', async () => {
    const { ports } = await startWith({ maxConnections: 3 });
    const sockets = await Promise.all(
      [0, 1, 2, 3, 4].map(async () => {
        const s = net.connect({ host: HOST, port: ports.grpc });
        s.on('error', () => undefined);
        await once(s, 'connect');
        return s;
      }),
    );
    const closed = sockets.map((s) => once(s, 'close').then(() => s));
    const first = await Promise.race(closed);
    const second = await Promise.race(closed.filter((_, i) => sockets[i] !== first));
    assert.equal(
      sockets.filter((s) => s !== first && s !== second && !s.destroyed).length,
      3,
      'three connections (the cap) remain open',
    );
    assert.match(istiodLog, /connection refused: too many connections/);
    for (const s of sockets) s.destroy();
  });
});
