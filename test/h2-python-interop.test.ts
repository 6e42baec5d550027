import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createHash } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { H2Session } from '../src/h2/h2-session.js';
import type { H2Stream } from '../src/h2/h2-stream.js';
import type { ResponseHead } from '../src/h2/message-headers.js';
import type { MeshFixture } from './helpers/mesh-fixture.js';
import { CLIENT_ID, connectHboneTls, h2Options, SERVER_ID, useHboneTls } from './helpers/h2-tls.js';
import { PYTHON, pythonSkip, runPython } from './helpers/python.js';
import { startGoPeer } from './helpers/go.js';
import { packageRoot } from '../src/lib/package-root.js';

const HOST = '127.107.0.4';
const PYTHON_SERVER = '127.107.0.5';
const PYTHON_PORT = 15008;
const SCRIPT = path.join(packageRoot(), 'test', 'interop', 'h2_connect_peer.py');
const skip = pythonSkip('h2', 'python3-h2');

/** The bytes the Python peer sends: the same formula as its `pattern(n, 1)`. */
const pattern = (n: number): Buffer => Buffer.from(Array.from({ length: n }, (_, i) => (i * 31 + 1) & 0xff));
const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

/** Writes `uri`'s certificate, key and the CA root as PEM files for the Python peer. */
async function pemFiles(fx: MeshFixture, uri: string, name: string): Promise<string[]> {
  const c = await fx.cert(uri);
  await writeFile(fx.file(`${name}.crt`), c.leafPem + c.intermediatesPem.join(''));
  await writeFile(fx.file(`${name}.key`), c.keyPem);
  await writeFile(fx.file('root.pem'), c.rootsPem.join(''));
  return [fx.file(`${name}.crt`), fx.file(`${name}.key`), fx.file('root.pem')];
}

describe('our HTTP/2 session against Python h2 (an independent HTTP/2 stack), over TLS 1.3', { skip }, () => {
  const ctx = useHboneTls(HOST);

  test('a Python h2 client CONNECTs to our server session: its bytes echo back through flow control, then both half-close', async () => {
    void ctx.server.accepted().then((socket) => {
      new H2Session(socket, h2Options('server')).on('stream', (s: H2Stream) => {
        s.respond(200);
        s.pipe(s);
      });
    });
    const size = 1024 * 1024 + 7;
    const r = await runPython(
      'h2_connect_peer.py',
      [
        'client',
        HOST,
        String(ctx.server.port),
        '10.0.0.1:8080',
        String(size),
        ...(await pemFiles(ctx.fx, CLIENT_ID, 'pyclient')),
      ],
      60_000,
    );
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout) as unknown, { status: '200', received: size, sha256: sha256(pattern(size)) });
  });

  test('our client session CONNECTs to a Python h2 server: 200, bytes both ways under its 64 KiB windows, END_STREAM both ways', async () => {
    const files = await pemFiles(ctx.fx, SERVER_ID, 'pyserver');
    const py = startGoPeer(PYTHON, [SCRIPT, 'server', PYTHON_SERVER, String(PYTHON_PORT), ...files], 'listening');
    try {
      await py.ready;
      const socket = await connectHboneTls(ctx.fx, PYTHON_SERVER, PYTHON_PORT);
      const session = new H2Session(socket, h2Options('client'));
      await once(session, 'remoteSettings');
      const s = session.connect('10.1.2.3:9000', [['baggage', 'k8s.namespace.name=h2']]);
      const [head] = (await once(s, 'response')) as [ResponseHead];
      assert.equal(head.status, 200);
      const payload = pattern(2 * 1024 * 1024 + 3);
      const parts: Buffer[] = [];
      s.on('data', (d: Buffer) => parts.push(d));
      s.end(payload);
      await once(s, 'end');
      assert.equal(sha256(Buffer.concat(parts)), sha256(payload));
      const request = JSON.parse(
        py
          .output()
          .split('\n')
          .find((l) => l.startsWith('{')) ?? '{}',
      ) as unknown;
      assert.deepEqual(request, { method: 'CONNECT', authority: '10.1.2.3:9000', scheme: false, path: false });
      session.close();
      await once(session, 'close');
    } finally {
      py.proc.kill();
    }
  });
});
