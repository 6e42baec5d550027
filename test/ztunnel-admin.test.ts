import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { once } from 'node:events';
import { spawnZtunnel, type ZtunnelProcess } from '../src/demo/ztunnel-process.js';
import { freeControlPorts } from './helpers/free-port.js';
import { socks5Connect } from '../src/echo/socks5-client.js';
import { meshFixture, sendAndCollect, waitFor, type MeshFixture } from './helpers/mesh-fixture.js';

const MESH = `
workloads:
- {uid: Kubernetes//Pod/a/client-0, name: client-0, namespace: a, serviceAccount: client, workloadIps: [127.36.0.1], protocol: HBONE, node: n1}
- {uid: Kubernetes//Pod/b/server-0, name: server-0, namespace: b, serviceAccount: server, workloadIps: [127.36.0.2], protocol: HBONE, node: n1}
`;

describe('ztunnel admin, access logs and half-close (one process, LOG_FORMAT=json)', () => {
  let fx: MeshFixture;
  let zt: ZtunnelProcess;
  let app: net.Server;

  before(async () => {
    fx = await meshFixture();
    await fx.write('mesh.yaml', MESH);
    // An app that answers and then closes its write side first, but keeps reading.
    app = net.createServer({ allowHalfOpen: true }, (s) => {
      let got = '';
      s.write('server-first;');
      s.end();
      s.on('data', (d: Buffer) => (got += d.toString()));
      s.on('end', () => {
        app.emit('received', got);
        s.destroy();
      });
    });
    await new Promise<void>((r) => app.listen(8080, '127.36.0.2', r));
    zt = spawnZtunnel({
      localConfig: fx.file('mesh.yaml'),
      nodeName: 'n1',
      localCa: fx.ca,
      controlIp: '127.36.1.1',
      controlPorts: await freeControlPorts('127.36.1.1'),
      env: { LOG_FORMAT: 'json', UNSTABLE_ENABLE_SOCKS5: 'true' },
    });
    await zt.waitReady();
  });

  after(async () => {
    await zt.stop();
    app.close();
    await fx.cleanup();
  });

  test('half-close from the app side: the client sees EOF and can still send', async () => {
    const s = await socks5Connect('127.36.0.1', 15080, '127.36.0.2', 8080, '127.36.0.1');
    s.resume();
    let got = '';
    s.on('data', (d: Buffer) => (got += d.toString()));
    await once(s, 'end');
    assert.equal(got, 'server-first;');
    const received = once(app, 'received');
    s.end('client-after-eof');
    assert.deepEqual(await received, ['client-after-eof']);
  });

  test('access logs are JSON with the fields of ztunnel `src/proxy/metrics.rs`', async () => {
    await sendAndCollect(await socks5Connect('127.36.0.1', 15080, '127.36.0.2', 8080, '127.36.0.1'), 'x');
    let entry: Record<string, unknown> | undefined;
    await waitFor('an inbound access log line', () => {
      entry = zt
        .output()
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .find((o) => o['scope'] === 'access' && o['message'] === 'connection complete' && o['direction'] === 'inbound');
      return entry !== undefined;
    });
    for (const k of [
      'src.addr',
      'src.workload',
      'src.namespace',
      'src.identity',
      'dst.addr',
      'dst.hbone_addr',
      'dst.workload',
      'dst.namespace',
      'dst.identity',
      'direction',
      'bytes_sent',
      'bytes_recv',
      'duration',
    ]) {
      assert.ok(entry !== undefined && k in entry, `missing ${k} in ${JSON.stringify(entry)}`);
    }
    assert.equal(entry!['src.identity'], 'spiffe://cluster.local/ns/a/sa/client');
    // As ztunnel logs them (src/proxy/metrics.rs, src/proxy/inbound.rs): the HBONE address, then the CONNECT target.
    assert.equal(entry!['dst.addr'], '127.36.0.2:15008');
    assert.equal(entry!['dst.hbone_addr'], '127.36.0.2:8080');
    assert.match(String(entry!['duration']), /^\d+ms$/);
  });

  test('/config_dump has the keys istioctl parses; certificates and workloadState are filled in', async () => {
    const d = (await (await fetch(`http://${zt.admin}/config_dump`)).json()) as Record<string, unknown>;
    for (const k of [
      'workloads',
      'services',
      'policies',
      'stagedServices',
      'staticConfig',
      'version',
      'config',
      'certificates',
      'workloadState',
    ])
      assert.ok(k in d, k);
    const certs = d['certificates'] as {
      identity: string;
      state: string;
      certChain: { pem: string; serialNumber: string }[];
      rootCerts: unknown[];
    }[];
    const c = certs.find((x) => x.identity === 'spiffe://cluster.local/ns/b/sa/server');
    assert.equal(c?.state, 'Available');
    assert.equal(c.certChain.length, 2, 'leaf + intermediate');
    assert.equal(c.rootCerts.length, 1);
    assert.match(Buffer.from(c.certChain[0]!.pem, 'base64').toString(), /BEGIN CERTIFICATE/);
    assert.match(c.certChain[0]!.serialNumber, /^\d+$/);
    const ws = d['workloadState'] as Record<string, { state: string; info: { serviceAccount: string } }>;
    assert.equal(ws['Kubernetes//Pod/b/server-0']?.state, 'Up');
    assert.equal(ws['Kubernetes//Pod/b/server-0'].info.serviceAccount, 'server');
    const wl = (d['workloads'] as { uid: string; workloadIps: string[]; protocol: string }[]).find(
      (w) => w.uid === 'Kubernetes//Pod/a/client-0',
    );
    assert.deepEqual(wl?.workloadIps, ['127.36.0.1']);
    assert.equal(wl.protocol, 'HBONE');
  });

  test('/logging changes levels at runtime and rejects unknown ones; /quitquitquit needs POST', async () => {
    const bad = await fetch(`http://${zt.admin}/logging?level=loud`, { method: 'POST' });
    assert.equal(bad.status, 400);
    const set = await fetch(`http://${zt.admin}/logging?level=access=debug`, { method: 'POST' });
    assert.equal(set.status, 200);
    assert.match(await set.text(), /access=debug/);
    await sendAndCollect(await socks5Connect('127.36.0.1', 15080, '127.36.0.2', 8080, '127.36.0.1'), 'y');
    await waitFor('debug "connection opened" access log', () => zt.output().includes('"message":"connection opened"'));
    const reset = await fetch(`http://${zt.admin}/logging?reset`, { method: 'POST' });
    assert.doesNotMatch(await reset.text(), /access=debug/);
    assert.equal((await fetch(`http://${zt.admin}/logging`)).status, 405);
    assert.equal((await fetch(`http://${zt.admin}/quitquitquit`)).status, 405);
    assert.equal((await fetch(`http://${zt.admin}/nope`)).status, 404);
  });
});

test('a ztunnel with no workload on its node keeps running, ready, until SIGTERM stops it (as upstream does)', async (t) => {
  const fx = await meshFixture();
  t.after(() => fx.cleanup());
  await fx.write('mesh.yaml', 'workloads: []\n');
  const zt = spawnZtunnel({
    localConfig: fx.file('mesh.yaml'),
    nodeName: 'n1',
    localCa: fx.ca,
    controlIp: '127.36.2.1',
    controlPorts: await freeControlPorts('127.36.2.1'),
    env: { LOG_FORMAT: 'json' },
  });
  t.after(() => zt.stop());
  // It answers once it has started: a process that exited after starting would not.
  await zt.waitReady();
  assert.equal((await fetch(`http://${zt.readiness}/healthz/ready`)).status, 200);
  assert.equal(zt.child.exitCode, null);
  assert.equal(await zt.stop('SIGTERM'), 0);
  assert.match(zt.output(), /"message":"ztunnel stopped"/);
});
