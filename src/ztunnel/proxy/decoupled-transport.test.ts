import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import type net from 'node:net';
import tls from 'node:tls';
import { CertificateAuthority, issueServingCertificate } from '../../lib/pki/certificate-authority.js';
import { DecoupledTransport, type TransportBounds } from './decoupled-transport.js';

const LOOPBACK = '127.70.0.30';
/** Small bounds, so a few MiB are far past them. */
const BOUNDS: TransportBounds = Object.freeze({ read: 256 * 1024, write: 256 * 1024 });
/** What one read of the TLS socket can add past the read bound: the transport pauses after the push that crosses it. */
const ONE_TLS_READ = 64 * 1024;
/** More than loopback's socket buffers hold. */
const PAYLOAD = 32 * 1024 * 1024;

const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

/** A real TLS 1.3 connection on loopback: the transport wraps the client end; `peer` is the server end. */
async function tlsPair(): Promise<{ transport: DecoupledTransport; client: tls.TLSSocket; peer: tls.TLSSocket; close: () => void }> {
  const ca = await CertificateAuthority.selfSigned('cluster.local');
  const { keyPem, chain } = await issueServingCertificate(ca, ['localhost'], 3600);
  const server = tls.createServer({ key: keyPem, cert: chain.slice(0, -1).join(''), minVersion: 'TLSv1.3' });
  server.listen(0, LOOPBACK);
  await once(server, 'listening');
  const accepted = once(server, 'secureConnection') as Promise<[tls.TLSSocket]>;
  const client = tls.connect({ host: LOOPBACK, port: (server.address() as net.AddressInfo).port, servername: 'localhost', ca: chain.at(-1), minVersion: 'TLSv1.3' });
  await once(client, 'secureConnect');
  const [peer] = await accepted;
  const transport = new DecoupledTransport(client, BOUNDS);
  return { transport, client, peer, close: () => (transport.destroy(), peer.destroy(), server.close()) };
}

/** Resolves once `check` holds, checking every few milliseconds; fails after 10 s. */
async function until(check: () => boolean): Promise<void> {
  for (const start = Date.now(); !check(); await new Promise((r) => setTimeout(r, 5))) {
    if (Date.now() - start > 10_000) throw new Error('timed out');
  }
}

/** Everything `r` delivers until `n` bytes arrived. */
async function take(r: NodeJS.ReadableStream, n: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let got = 0;
  for await (const c of r) {
    chunks.push(c as Buffer);
    got += (c as Buffer).length;
    if (got >= n) break;
  }
  return Buffer.concat(chunks);
}

test('a peer sending past the read bound (ignoring flow control) is held back by TCP: the transport holds at most the bound, and every byte arrives once read', async () => {
  const { transport, client, peer, close } = await tlsPair();
  try {
    let held = 0;
    client.on('data', () => (held = Math.max(held, transport.readableLength)));
    const payload = randomBytes(PAYLOAD);
    const sent = new Promise<string>((resolve) => peer.write(payload, () => resolve('the peer wrote everything')));
    // Nobody reads the transport: it stops reading the TLS socket once it holds the bound, long before the peer
    // has written everything (the rest waits in the peer and the kernel).
    assert.equal(await Promise.race([once(client, 'pause').then(() => 'paused'), sent]), 'paused');
    assert.ok(held <= BOUNDS.read + ONE_TLS_READ, `the transport held ${held} bytes`);
    const got = await take(transport, PAYLOAD);
    assert.equal(got.length, PAYLOAD);
    assert.equal(sha256(got), sha256(payload));
    assert.ok(held <= BOUNDS.read + ONE_TLS_READ, `the transport held ${held} bytes`);
  } finally {
    close();
  }
});

test('writes complete at once while the TLS socket queues at most the write bound; past it they wait for the peer to read, and every byte arrives', async () => {
  const { transport, client, peer, close } = await tlsPair();
  try {
    peer.pause();
    const size = PAYLOAD;
    const payload = randomBytes(size);
    const CHUNK = 64 * 1024;
    // What the TLS socket holds at the moment the transport completes a write (the writer's callbacks run later).
    let queuedAtCompletion = 0;
    const completing = (cb: (e?: Error | null) => void) => (e?: Error | null): void => {
      queuedAtCompletion = Math.max(queuedAtCompletion, client.writableLength);
      cb(e);
    };
    const write = transport._write.bind(transport);
    const writev = transport._writev.bind(transport);
    transport._write = (c, enc, cb): void => write(c, enc, completing(cb));
    transport._writev = (cs, cb): void => writev(cs, completing(cb));
    const written = new Promise<void>((resolve, reject) => {
      let left = size / CHUNK;
      for (let off = 0; off < size; off += CHUNK) {
        transport.write(payload.subarray(off, off + CHUNK), (e) => {
          if (e) reject(e);
          if (--left === 0) resolve();
        });
      }
    });
    // The peer reads only once the TLS socket holds more than the bound (the kernel's buffers are full): a write
    // completed past the bound would show in queuedAtCompletion.
    await until(() => client.writableLength > BOUNDS.write);
    peer.resume();
    const [got] = await Promise.all([take(peer, size), written]);
    assert.ok(queuedAtCompletion <= BOUNDS.write, `a write completed with ${queuedAtCompletion} bytes queued in TLS`);
    assert.equal(sha256(got), sha256(payload));
  } finally {
    close();
  }
});
