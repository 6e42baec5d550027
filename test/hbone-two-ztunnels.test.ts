import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import tls from 'node:tls';
import { once } from 'node:events';
import { spawnZtunnel, type ZtunnelProcess } from '../src/demo/ztunnel-process.js';
import { freeControlPorts } from './helpers/free-port.js';
import { startEchoServer, type EchoServer } from '../src/echo/echo-server.js';
import { socks5Connect, Socks5Error } from '../src/echo/socks5-client.js';
import { HBONE_TLS, clientTlsOptions } from '../src/ztunnel/tls/workload-tls.js';
import { isMeshError } from '../src/lib/errors.js';
import { CertificateAuthority } from '../src/lib/pki/certificate-authority.js';
import { createKeyAndCsr } from '../src/lib/pki/csr.js';
import { parseIdentity } from '../src/lib/spiffe.js';
import {
  workloadCertificateFromChain,
  type WorkloadCertificate,
} from '../src/ztunnel/identity/workload-certificate.js';
import { meshFixture, hboneSession, requestStatus, sendAndCollect, type MeshFixture } from './helpers/mesh-fixture.js';
import { printedLine } from './helpers/printed-line.js';

const CLIENT_IP = '127.20.0.1';
const SERVER_IP = '127.20.0.2';
const CLIENT_ID = 'spiffe://cluster.local/ns/frontend/sa/web';
const SERVER_ID = 'spiffe://cluster.local/ns/backend/sa/echo';

function mesh(policies = '[]', serverSa = 'echo'): string {
  return `
workloads:
- {uid: Kubernetes//Pod/frontend/web-0, name: web-0, namespace: frontend, serviceAccount: web, workloadName: web, workloadIps: [${CLIENT_IP}], protocol: HBONE, node: node1}
- {uid: Kubernetes//Pod/frontend/web-x, name: web-x, namespace: frontend, serviceAccount: web, workloadIps: [127.20.0.5], protocol: HBONE, node: node1b}
- uid: Kubernetes//Pod/backend/echo-0
  name: echo-0
  namespace: backend
  serviceAccount: ${serverSa}
  workloadName: echo
  workloadIps: [${SERVER_IP}]
  protocol: HBONE
  node: node2
  services: {backend/echo.backend.svc.cluster.local: {80: 8080}}
services:
- {name: echo, namespace: backend, hostname: echo.backend.svc.cluster.local, vips: [/10.96.0.10], ports: {80: 8080, 81: 8081}}
- {name: other, namespace: backend, hostname: other.backend.svc.cluster.local, vips: [/10.96.0.11], ports: {80: 8080}}
policies: ${policies}
`;
}

const DENY_WEB = `
- {name: deny-web, namespace: backend, scope: Namespace, action: Deny, dryRun: false, rules: [[[{principals: [{Exact: cluster.local/ns/frontend/sa/web}]}]]]}`;

/**
 * What the HBONE server does with a client after the handshake. In TLS 1.3 it checks the client's certificate after
 * the client's Finished, so a refusal shows as an error or a close instead of its SETTINGS ("got data").
 */
function serverVerdict(c: tls.TLSSocket): Promise<string> {
  return new Promise<string>((resolve) => {
    c.once('error', (e: Error) => resolve(`error: ${e.message}`));
    c.once('secureConnect', () => {
      c.once('data', () => resolve('got data'));
      c.once('close', () => resolve('closed'));
      c.write('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');
    });
  });
}

describe('two ztunnel processes', () => {
  let fx: MeshFixture;
  let z1: ZtunnelProcess;
  let z2: ZtunnelProcess;
  let echo: EchoServer;

  before(async () => {
    fx = await meshFixture();
    await fx.write('mesh.yaml', mesh());
    echo = await startEchoServer(SERVER_IP, 8080);
    z1 = spawnZtunnel({
      localConfig: fx.file('mesh.yaml'),
      nodeName: 'node1',
      localCa: fx.ca,
      controlIp: '127.20.1.1',
      controlPorts: await freeControlPorts('127.20.1.1'),
      env: { LOG_FORMAT: 'json', UNSTABLE_ENABLE_SOCKS5: 'true' },
    });
    z2 = spawnZtunnel({
      localConfig: fx.file('mesh.yaml'),
      nodeName: 'node2',
      localCa: fx.ca,
      controlIp: '127.20.1.2',
      controlPorts: await freeControlPorts('127.20.1.2'),
      env: { LOG_FORMAT: 'json', UNSTABLE_ENABLE_SOCKS5: 'true' },
    });
    await Promise.all([z1.waitReady(), z2.waitReady()]);
  });

  after(async () => {
    // Optional: a failed `before` leaves some unset, and what it started must still stop or the file never ends.
    await Promise.all([z1?.stop(), z2?.stop()]);
    await echo?.close();
    await fx?.cleanup();
  });

  /** Writes the mesh and resolves once `z` has applied it: its `applied local config` line with `policies` policies. */
  const applyMesh = async (z: ZtunnelProcess, text: string, policies: number): Promise<void> => {
    const applied = printedLine(
      z,
      `the mesh with ${policies} policies`,
      (l) => l['message'] === 'applied local config' && l['policies'] === policies,
    );
    await fx.write('mesh.yaml', text);
    await applied;
  };

  test('SOCKS5 -> HBONE -> app across two processes, both directions, with half-close', async () => {
    const s = await socks5Connect(CLIENT_IP, 15080, '10.96.0.10', 80, CLIENT_IP);
    const payload = Buffer.alloc(300_000, 7);
    const back = await sendAndCollect(s, payload);
    assert.equal(back.length, payload.length);
    assert.ok(back.equals(payload));
  });

  test('the app sees the source workload IP (spoofed like IP_TRANSPARENT on loopback)', async () => {
    const s = await socks5Connect(CLIENT_IP, 15080, SERVER_IP, 8080, CLIENT_IP);
    const res = (
      await sendAndCollect(s, Buffer.from('GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'))
    ).toString();
    const body = JSON.parse(res.slice(res.indexOf('\r\n\r\n') + 4)) as { peer: string };
    assert.match(body.peer, new RegExp(`^${CLIENT_IP.replace(/\./g, '\\.')}:`));
  });

  test("the destination's metrics carry the client's source_principal and mutual_tls", async () => {
    const s = await socks5Connect(CLIENT_IP, 15080, '10.96.0.10', 80, CLIENT_IP);
    await sendAndCollect(s, Buffer.from('x'));
    const text = await (await fetch(`http://${z2.metrics}/metrics`)).text();
    const line = text
      .split('\n')
      .find((l) => l.startsWith('istio_tcp_connections_opened_total{') && l.includes('reporter="destination"'));
    assert.ok(line !== undefined, text);
    assert.match(line, new RegExp(`source_principal="${CLIENT_ID}"`));
    assert.match(line, /connection_security_policy="mutual_tls"/);
    assert.match(line, new RegExp(`destination_principal="${SERVER_ID}"`));
    assert.match(
      line,
      /destination_service="echo\.backend\.svc\.cluster\.local"/,
      'service attributed from Forwarded: host=',
    );
    const prom = await (await fetch(`http://${z2.metrics}/stats/prometheus`)).text();
    assert.match(prom, /istio_tcp_received_bytes_total\{reporter="destination"/);
    const src = await (await fetch(`http://${z1.metrics}/metrics`)).text();
    assert.match(
      src,
      /istio_tcp_connections_opened_total\{reporter="source"[^}]*destination_service="echo\.backend\.svc\.cluster\.local"/,
    );
  });

  test('byte counters include a long-lived connection while it is still open', async () => {
    const received = async (): Promise<number> => {
      const text = await (await fetch(`http://${z2.metrics}/metrics`)).text();
      return text
        .split('\n')
        .filter((l) => l.startsWith('istio_tcp_received_bytes_total{reporter="destination"'))
        .reduce((n, l) => n + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
    };
    const before = await received();
    const s = await socks5Connect(CLIENT_IP, 15080, SERVER_IP, 8080, CLIENT_IP);
    s.resume();
    const echoed = new Promise<void>((resolve) => {
      let got = 0;
      s.on('data', (d: Buffer) => {
        got += d.length;
        if (got === 12_345) resolve();
      });
    });
    s.write(Buffer.alloc(12_345, 1));
    await echoed;
    assert.ok((await received()) - before >= 12_345, 'counted before the close');
    s.destroy();
  });

  test('HBONE answers 400 for a non-CONNECT method and a bad :authority, 503 for a closed app port, 401 on deny', async () => {
    const cert = await fx.cert(CLIENT_ID);
    const s = await hboneSession(SERVER_IP, cert, [SERVER_ID], CLIENT_IP);
    try {
      assert.equal(
        await requestStatus(s, {
          ':method': 'GET',
          ':path': '/',
          ':scheme': 'https',
          ':authority': `${SERVER_IP}:8080`,
        }),
        400,
      );
      assert.equal(await requestStatus(s, { ':method': 'CONNECT', ':authority': 'not-an-authority' }), 400);
      assert.equal(
        await requestStatus(s, { ':method': 'CONNECT', ':authority': `127.20.0.99:8080` }),
        400,
        'IP mismatch',
      );
      assert.equal(
        await requestStatus(s, { ':method': 'CONNECT', ':authority': `${SERVER_IP}:8089` }),
        503,
        'nothing listens',
      );
      assert.equal(
        await requestStatus(s, { ':method': 'CONNECT', ':authority': `${SERVER_IP}:15008` }),
        503,
        'ztunnel port',
      );
      assert.equal(await requestStatus(s, { ':method': 'CONNECT', ':authority': `${SERVER_IP}:8080` }), 200);
    } finally {
      s.close();
    }
    await applyMesh(z2, mesh(DENY_WEB), 1);
    try {
      const denied = printedLine(z2, 'the access log of the denied CONNECT', (l) =>
        String(l['error']).includes('ZT_ERR_POLICY_DENIED'),
      );
      const s2 = await hboneSession(SERVER_IP, cert, [SERVER_ID], CLIENT_IP);
      assert.equal(
        await requestStatus(s2, {
          ':method': 'CONNECT',
          ':authority': `${SERVER_IP}:8080`,
          forwarded: 'host=echo.backend.svc.cluster.local',
        }),
        401,
      );
      s2.close();
      assert.equal((await denied)['message'], 'connection complete');
      // As ztunnel records a built connection that policy refuses (src/proxy/metrics.rs): opened, then closed and
      // failed with DENY, and an access log `connection complete` with error=; still attributed to the service the
      // client named (ztunnel derives the service before it applies policy).
      const text = await (await fetch(`http://${z2.metrics}/metrics`)).text();
      for (const m of ['opened', 'closed', 'failed']) {
        const flag = m === 'opened' ? '-' : 'DENY';
        assert.ok(
          text
            .split('\n')
            .some(
              (l) =>
                l.startsWith(`istio_tcp_connections_${m}_total{`) &&
                l.includes('reporter="destination"') &&
                l.includes(`response_flags="${flag}"`) &&
                l.includes('destination_service="echo.backend.svc.cluster.local"'),
            ),
          `istio_tcp_connections_${m}_total{response_flags="${flag}",destination_service="echo.backend.svc.cluster.local"} on the destination`,
        );
      }
    } finally {
      await applyMesh(z2, mesh(), 0);
    }
  });

  test('TLS 1.2 and clients without a certificate are refused', async () => {
    const cert = await fx.cert(CLIENT_ID);
    const opts = clientTlsOptions(cert, [SERVER_ID]);
    const v12 = tls.connect({ ...opts, host: SERVER_IP, port: 15008, minVersion: 'TLSv1.2', maxVersion: 'TLSv1.2' });
    const [err] = (await once(v12, 'error')) as [Error];
    assert.match(err.message, /version|protocol/i);
    const noCert = tls.connect({
      ...HBONE_TLS,
      host: SERVER_IP,
      port: 15008,
      ca: cert.rootsPem.join(''),
      checkServerIdentity: () => undefined,
    });
    const outcome = await serverVerdict(noCert);
    assert.notEqual(outcome, 'got data');
    assert.match(outcome, /certificate|closed/i);
  });

  test('a certificate from another CA is refused on both sides, even with the right SPIFFE identity', async () => {
    const mine = await fx.cert(CLIENT_ID);
    const foreignCa = await CertificateAuthority.selfSigned('cluster.local');
    const foreign = async (uri: string): Promise<WorkloadCertificate> => {
      const { keyPem, csrPem } = await createKeyAndCsr(uri);
      return workloadCertificateFromChain(parseIdentity(uri), keyPem, await foreignCa.sign(csrPem, uri, 3600));
    };
    // Client side of the server's check: our roots to verify the server, a foreign certificate to present.
    const impostor = await foreign(CLIENT_ID);
    const c = tls.connect({
      ...clientTlsOptions(mine, [SERVER_ID]),
      key: impostor.keyPem,
      cert: impostor.leafPem,
      host: SERVER_IP,
      port: 15008,
    });
    const outcome = await serverVerdict(c);
    // With a mesh certificate the server would answer with its SETTINGS; here it hangs up (unknown CA alert).
    assert.notEqual(outcome, 'got data');
    assert.match(outcome, /certificate|unknown ca|closed/i);
    // Server side of the client's check: a server with the expected identity, signed by someone else.
    const fake = await foreign(SERVER_ID);
    const server = tls.createServer({ ...HBONE_TLS, key: fake.keyPem, cert: fake.leafPem });
    server.on('tlsClientError', () => undefined);
    server.listen(15008, '127.20.0.9');
    await once(server, 'listening');
    try {
      const s = tls.connect({ ...clientTlsOptions(mine, [SERVER_ID]), host: '127.20.0.9', port: 15008 });
      const [err] = (await once(s, 'error')) as [Error];
      assert.match(err.message, /self[- ]signed|unable to (get|verify)|certificate/i);
    } finally {
      server.close();
    }
  });

  test('a server with the wrong SPIFFE identity is refused by the client', async () => {
    const cert = await fx.cert(CLIENT_ID);
    const sock = tls.connect({
      ...clientTlsOptions(cert, ['spiffe://cluster.local/ns/backend/sa/someone-else']),
      host: SERVER_IP,
      port: 15008,
    });
    const [err] = (await once(sock, 'error')) as [Error];
    assert.ok(isMeshError(err, 'ZT_ERR_IDENTITY_MISMATCH'), String(err));
    // Through a ztunnel whose view says the destination runs as another service account:
    await fx.write('alt.yaml', mesh('[]', 'expected-sa'));
    const z3 = spawnZtunnel({
      localConfig: fx.file('alt.yaml'),
      nodeName: 'node1b',
      localCa: fx.ca,
      controlIp: '127.20.1.3',
      controlPorts: await freeControlPorts('127.20.1.3'),
      env: { LOG_FORMAT: 'json', UNSTABLE_ENABLE_SOCKS5: 'true' },
    });
    try {
      await z3.waitReady();
      const logged = printedLine(z3, 'the identity mismatch', (l) =>
        String(l['error']).startsWith('ZT_ERR_IDENTITY_MISMATCH'),
      );
      await assert.rejects(
        socks5Connect('127.20.0.5', 15080, SERVER_IP, 8080, '127.20.0.5'),
        (e) => e instanceof Socks5Error,
      );
      await logged;
    } finally {
      await z3.stop();
    }
  });

  test("a CONNECT to the workload's IP is attributed to the service it backs whose port reaches it, even when Forwarded names a service it does not back (ztunnel guess_inbound_service)", async () => {
    const opened = async (service: string): Promise<number> => {
      const text = await (await fetch(`http://${z2.metrics}/metrics`)).text();
      return text
        .split('\n')
        .filter(
          (l) =>
            l.startsWith('istio_tcp_connections_opened_total{') &&
            l.includes('reporter="destination"') &&
            l.includes(`destination_service="${service}"`),
        )
        .reduce((n, l) => n + Number(l.split(' ').at(-1)), 0);
    };
    const before_ = await opened('echo.backend.svc.cluster.local');
    const completed = printedLine(z2, 'both connections complete', (l) => l['message'] === 'connection complete', {
      count: 2,
    });
    const s = await hboneSession(SERVER_IP, await fx.cert(CLIENT_ID), [SERVER_ID], CLIENT_IP);
    try {
      assert.equal(await requestStatus(s, { ':method': 'CONNECT', ':authority': `${SERVER_IP}:8080` }), 200);
      assert.equal(
        await requestStatus(s, {
          ':method': 'CONNECT',
          ':authority': `${SERVER_IP}:8080`,
          forwarded: 'host=other.backend.svc.cluster.local',
        }),
        200,
      );
    } finally {
      s.close();
    }
    await completed;
    assert.equal(await opened('echo.backend.svc.cluster.local'), before_ + 2, 'both counted against echo');
    assert.equal(await opened('other.backend.svc.cluster.local'), 0);
  });

  test("a client the destination does not know by its IP is named in metrics and the access log by its CONNECT's baggage", async () => {
    const completed = printedLine(
      z2,
      'the baggage connection complete',
      (l) => l['message'] === 'connection complete' && l['src.addr']?.toString().startsWith('127.20.0.9:') === true,
    );
    const s = await hboneSession(SERVER_IP, await fx.cert(CLIENT_ID), [SERVER_ID], '127.20.0.9');
    try {
      const headers = {
        ':method': 'CONNECT',
        ':authority': `${SERVER_IP}:8080`,
        baggage:
          'k8s.cluster.name=east,k8s.namespace.name=frontend,k8s.deployment.name=web-vm,service.name=web,service.version=v3',
      };
      assert.equal(await requestStatus(s, headers), 200);
    } finally {
      s.close();
    }
    const log = await completed;
    assert.deepEqual(
      [log['src.workload'], log['src.namespace'], log['src.cluster'], log['src.identity']],
      ['web', 'frontend', 'east', CLIENT_ID],
    );
    const text = await (await fetch(`http://${z2.metrics}/metrics`)).text();
    const line = text
      .split('\n')
      .find((l) => l.startsWith('istio_tcp_connections_opened_total{') && l.includes('source_workload="web-vm"'));
    assert.ok(line !== undefined, text);
    for (const label of [
      'source_canonical_service="web"',
      'source_canonical_revision="v3"',
      'source_workload_namespace="frontend"',
      'source_cluster="east"',
      `source_principal="${CLIENT_ID}"`,
    ])
      assert.ok(line.includes(label), `${label} in ${line}`);
  });

  test('a policy change closes a live, newly denied connection at once, logged as the late denial it is', async () => {
    const s = await socks5Connect(CLIENT_IP, 15080, SERVER_IP, 8080, CLIENT_IP);
    s.resume();
    s.write('ping');
    await once(s, 'data');
    // The app socket is half-open capable: the mesh closing it shows up as EOF first.
    const closed = new Promise<void>((resolve) => {
      s.once('end', resolve);
      s.once('close', resolve);
    });
    s.on('error', () => undefined);
    // Logged as the denial it is (ztunnel: a late authorization rejection), not as a completed connection.
    const lateDenial = printedLine(
      z2,
      'the late denial',
      (l) =>
        l['message'] === 'connection complete' &&
        String(l['error']).includes('ZT_ERR_POLICY_DENIED') &&
        String(l['error']).includes('policy changed'),
    );
    await fx.write('mesh.yaml', mesh(DENY_WEB));
    try {
      await closed;
      await lateDenial;
    } finally {
      await applyMesh(z2, mesh(), 0);
    }
  });
});
