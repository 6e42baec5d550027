import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { startEchoServer, type EchoServer } from '../src/echo/echo-server.js';
import { socks5Connect } from '../src/echo/socks5-client.js';
import type { Ztunnel } from '../src/ztunnel/ztunnel.js';
import { meshFixture, sendAndCollect, waitFor, type MeshFixture } from './helpers/mesh-fixture.js';
import { PYTHON, pythonSkip, runPython } from './helpers/python.js';
import { startZtunnel } from './helpers/in-process.js';
import { packageRoot } from '../src/lib/package-root.js';

const SCRIPT = path.join(packageRoot(), 'test', 'interop', 'h2_hbone.py');
const skip = pythonSkip('h2', 'python3-h2');

const MESH = `
workloads:
- {uid: c, name: client, namespace: a, serviceAccount: client, workloadIps: [127.32.0.1], protocol: HBONE, node: n1}
- {uid: s, name: server, namespace: b, serviceAccount: server, workloadIps: [127.32.0.2], protocol: HBONE, node: n2}
- {uid: py, name: py, namespace: py, serviceAccount: py, workloadIps: [127.32.0.9], protocol: HBONE, node: python}
`;

describe('HBONE against Python h2 (a non-Node HTTP/2 stack)', { skip }, () => {
  let fx: MeshFixture;
  let echo: EchoServer;
  let z1: Ztunnel;
  let z2: Ztunnel;
  const pem = async (uri: string, name: string): Promise<string[]> => {
    const c = await fx.cert(uri);
    await writeFile(fx.file(`${name}.crt`), c.leafPem + c.intermediatesPem.join(''));
    await writeFile(fx.file(`${name}.key`), c.keyPem);
    await writeFile(fx.file('root.pem'), c.rootsPem.join(''));
    return [fx.file(`${name}.crt`), fx.file(`${name}.key`), fx.file('root.pem')];
  };

  before(async () => {
    fx = await meshFixture();
    await fx.write('mesh.yaml', MESH);
    echo = await startEchoServer('127.32.0.2', 8080);
    z1 = await startZtunnel(fx.file('mesh.yaml'), 'n1', fx.ca);
    z2 = await startZtunnel(fx.file('mesh.yaml'), 'n2', fx.ca);
  });
  after(async () => {
    await Promise.all([z1.shutdown(), z2.shutdown()]);
    await echo.close();
    await fx.cleanup();
  });

  test('a Python h2 client gets 200 from our HBONE server and its bytes echo back through the app', async () => {
    const files = await pem('spiffe://cluster.local/ns/py/sa/py', 'pyclient');
    const r = await runPython('h2_hbone.py', [
      'client',
      '127.32.0.2',
      '15008',
      '127.32.0.2:8080',
      'hello from python h2',
      ...files,
      '127.32.0.9',
    ]);
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout) as unknown, { status: '200', echoed: 'hello from python h2' });
    const bad = await runPython('h2_hbone.py', [
      'client',
      '127.32.0.2',
      '15008',
      '127.32.0.2:15008',
      'x',
      ...files,
      '127.32.0.9',
    ]);
    assert.deepEqual(JSON.parse(bad.stdout) as unknown, { status: '503', echoed: '' });
  });

  test('our HBONE client (SOCKS5 -> ztunnel) talks to a Python h2 HBONE server with the expected identity', async () => {
    const files = await pem('spiffe://cluster.local/ns/py/sa/py', 'pyserver');
    const py: ChildProcess = spawn(PYTHON, [SCRIPT, 'server', '127.32.0.9', '15008', ...files], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    py.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    py.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    try {
      await waitFor('python server', () => out.includes('listening'));
      const s = await socks5Connect('127.32.0.1', 15080, '127.32.0.9', 9000, '127.32.0.1');
      assert.equal(
        (await sendAndCollect(s, 'bytes through a foreign server')).toString(),
        'bytes through a foreign server',
      );
      const req = JSON.parse(out.split('\n').find((l) => l.startsWith('{')) ?? '{}') as {
        method?: string;
        authority?: string;
        peer?: string[];
      };
      assert.equal(req.method, 'CONNECT');
      assert.equal(req.authority, '127.32.0.9:9000');
      assert.deepEqual(req.peer, ['spiffe://cluster.local/ns/a/sa/client']);
    } finally {
      py.kill();
    }
  });
});
