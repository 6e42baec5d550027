// ztunnel's in-pod mode on real network namespaces: two pods joined by a veth pair, enrolled with Istio's in-pod
// rules, and one ztunnel whose in-pod runner serves both from inside their namespaces (as ZDS would hand them over).
// Root only: CI runs as root, so these run there.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import path from 'node:path';
import { once } from 'node:events';
import { mkdirSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { listenInNetns, tcpSocketInNetns } from '../src/native/native.js';
import { INPOD_MARK } from '../src/lib/istio-ports.js';
import type { Ztunnel } from '../src/ztunnel/ztunnel.js';
import { startZtunnel } from './helpers/in-process.js';
import { hboneSessionOver, meshFixture, type MeshFixture } from './helpers/mesh-fixture.js';
import { TestNetns, mustRun, netnsSkip } from './helpers/netns.js';
import { podPair, type PodPair } from './helpers/pod-pair.js';

const skip = netnsSkip();
const NODE = 'node94';
const CLIENT_IP = '10.94.0.1';
const SERVER_IP = '10.94.0.2';
const CLIENT_ID = 'spiffe://cluster.local/ns/ns-a/sa/client';
const SERVER_ID = 'spiffe://cluster.local/ns/ns-b/sa/server';
/** The server pod's app ports: STRICT mTLS on the first (istiod's static DENY of identity-less peers), not on the second. */
const STRICT_PORT = 8080;
const PERMISSIVE_PORT = 8081;
const SERVICE_VIP = '10.96.94.10';
const SERVER_INFO = { name: 'server-0', namespace: 'ns-b', serviceAccount: 'server' };

const MESH = `
workloads:
- {uid: Kubernetes//Pod/ns-a/client-0, name: client-0, namespace: ns-a, serviceAccount: client, workloadIps: [${CLIENT_IP}], protocol: HBONE, node: ${NODE}}
- uid: Kubernetes//Pod/ns-b/server-0
  name: server-0
  namespace: ns-b
  serviceAccount: server
  workloadIps: [${SERVER_IP}]
  protocol: HBONE
  node: ${NODE}
  authorizationPolicies: [istio-system/istio_converted_static_strict]
  services: {ns-b/echo.ns-b.svc.cluster.local: {80: ${STRICT_PORT}, 81: ${PERMISSIVE_PORT}}}
services:
- {name: echo, namespace: ns-b, hostname: echo.ns-b.svc.cluster.local, vips: [/${SERVICE_VIP}], ports: {80: ${STRICT_PORT}, 81: ${PERMISSIVE_PORT}}}
policies:
- {name: istio_converted_static_strict, namespace: istio-system, scope: WorkloadSelector, action: Deny, dryRun: false, rules: [[[{destinationPorts: [${STRICT_PORT}], notPrincipals: [{Presence: {}}]}]]]}
`;

/** Everything a connection receives until the peer ends or resets it (a reset ends it too: "" means no byte came). */
async function received(s: net.Socket): Promise<string> {
  let text = '';
  s.on('data', (d: Buffer) => (text += d.toString()));
  s.on('error', () => undefined);
  await once(s, 'close');
  return text;
}

/** A TCP connection from inside `ns` to `host:port`; with `mark`, it bypasses the pod's capture as ztunnel's own do. */
async function connectFrom(ns: TestNetns, host: string, port: number, mark?: number): Promise<net.Socket> {
  const s = tcpSocketInNetns(ns.path, 4, mark === undefined ? {} : { mark });
  s.connect(port, host);
  await once(s, 'connect');
  return s;
}

describe('ztunnel in-pod: listeners inside each pod network namespace (15001, 15006, 15008)', { skip }, () => {
  let fx: MeshFixture;
  let zt: Ztunnel;
  let client: TestNetns;
  let server: TestNetns;
  let pods: PodPair;
  const apps: net.Server[] = [];
  /** The source address of each connection the server pod's apps accepted, by port. */
  const seen: Record<number, string[]> = { [STRICT_PORT]: [], [PERMISSIVE_PORT]: [] };
  /** In-pod mode, with no node agent: the test hands the pods to the runner itself, so ztunnel never gets ready. */
  const env = (): Record<string, string> => ({
    INPOD_ENABLED: 'true',
    INPOD_UDS: path.join(fx.dir, 'no-agent.sock'),
    UNSTABLE_ENABLE_SOCKS5: 'false',
  });
  const metrics = async (): Promise<string> => (await fetch(`http://127.0.0.1:${zt.ports.metrics}/metrics`)).text();

  before(async () => {
    fx = await meshFixture();
    await fx.write('mesh.yaml', MESH);
    pods = await podPair(CLIENT_IP, SERVER_IP, true);
    ({ client, server } = pods);
    // What kubelet writes for a pod (ip netns exec mounts it over /etc/resolv.conf): a nameserver off the pod's
    // loopback, so the pod's DNS capture sends queries to ztunnel, and Kubernetes' search path and ndots.
    mkdirSync(`/etc/netns/${client.name}`, { recursive: true });
    writeFileSync(
      `/etc/netns/${client.name}/resolv.conf`,
      `nameserver ${SERVER_IP}\nsearch ns-a.svc.cluster.local svc.cluster.local cluster.local\noptions ndots:5\n`,
    );
    for (const port of [STRICT_PORT, PERMISSIVE_PORT]) {
      const app = net.createServer((s) => {
        seen[port]!.push(s.remoteAddress ?? '?');
        s.end(`app ${port} saw ${s.remoteAddress ?? '?'}`);
      });
      await listenInNetns(app, server.path, { host: '0.0.0.0', port });
      apps.push(app);
    }
    zt = await startZtunnel(fx.file('mesh.yaml'), NODE, fx.ca, env(), { waitReady: false });
    const inpod = zt.inpod!;
    await inpod.start(
      'pod-uid-a',
      { name: 'client-0', namespace: 'ns-a', serviceAccount: 'client' },
      openSync(client.path, 'r'),
    );
    await inpod.start('pod-uid-b', SERVER_INFO, openSync(server.path, 'r'));
  });

  after(async () => {
    await zt.shutdown();
    for (const a of apps) a.close();
    rmSync(`/etc/netns/${client.name}`, { recursive: true, force: true });
    await pods.remove();
    await fx.cleanup();
  });

  test('the listeners are bound inside the pods, not on the host, with the in-pod mark 0x539', async () => {
    const out = await server.exec('ss', ['-tlnHe']);
    for (const host of ['0\\.0\\.0\\.0', '\\[::\\]']) {
      for (const port of [15001, 15006, 15008])
        assert.match(
          out,
          new RegExp(`${host}:${port}\\b.*fwmark:0x${INPOD_MARK.toString(16)}`),
          `ss in the pod:\n${out}`,
        );
    }
    assert.doesNotMatch(await mustRun('ss', ['-tlnH']), /:15006\b/, 'nothing on the host');
  });

  test("inbound HBONE to the server pod's 15008 reaches its app from the peer's own source IP", async () => {
    const tcp = await connectFrom(client, SERVER_IP, 15008, INPOD_MARK);
    const session = await hboneSessionOver(tcp, SERVER_IP, await fx.cert(CLIENT_ID), [SERVER_ID]);
    try {
      const stream = session.request(
        { ':method': 'CONNECT', ':authority': `${SERVER_IP}:${STRICT_PORT}` },
        { endStream: false },
      );
      const [headers] = (await once(stream, 'response')) as [Record<string, string | number>];
      assert.equal(headers[':status'], 200);
      let text = '';
      stream.on('data', (d: Buffer) => (text += d.toString()));
      stream.end();
      await once(stream, 'end');
      assert.equal(
        text,
        `app ${STRICT_PORT} saw ${CLIENT_IP}`,
        'the app sees the client pod, not ztunnel, as its peer',
      );
    } finally {
      session.close();
    }
  });

  test('plaintext to a STRICT port is captured on 15006 and refused: the socket closes with no byte and the app never sees it', async () => {
    const before = seen[STRICT_PORT]!.length;
    // Marked, so the client pod's own capture lets it out as plaintext (an unmeshed client).
    const s = await connectFrom(client, SERVER_IP, STRICT_PORT, INPOD_MARK);
    assert.equal(await received(s), '');
    assert.equal(seen[STRICT_PORT]!.length, before);
    assert.match(
      await metrics(),
      /istio_tcp_connections_closed_total\{reporter="destination"[^}]*response_flags="DENY"[^}]*\} 1/,
    );
    // The same plaintext to a port STRICT does not cover is let through, from the client's own address.
    const ok = await connectFrom(client, SERVER_IP, PERMISSIVE_PORT, INPOD_MARK);
    assert.equal(await received(ok), `app ${PERMISSIVE_PORT} saw ${CLIENT_IP}`);
  });

  test('plaintext captured on 15006 is reported against the Service whose target port it reached, not "unknown" (ztunnel guess_inbound_service)', async () => {
    const ok = await connectFrom(client, SERVER_IP, PERMISSIVE_PORT, INPOD_MARK);
    assert.equal(await received(ok), `app ${PERMISSIVE_PORT} saw ${CLIENT_IP}`);
    // Counted when the connection opens, before a byte of the app's reply reaches the client.
    assert.match(
      await metrics(),
      /istio_tcp_connections_opened_total\{reporter="destination"[^}]*destination_service="echo\.ns-b\.svc\.cluster\.local",destination_service_namespace="ns-b",destination_service_name="echo"[^}]*connection_security_policy="unknown"/,
    );
  });

  test("outbound capture: an unchanged client's connection goes through 15001 over HBONE, and the server side's metrics carry both SPIFFE identities", async () => {
    // bash's /dev/tcp: a plain connect() by a process that knows nothing of the mesh.
    const out = await client.exec('bash', ['-c', `exec 3<>/dev/tcp/${SERVER_IP}/${STRICT_PORT}; cat <&3`]);
    assert.equal(out, `app ${STRICT_PORT} saw ${CLIENT_IP}`, 'STRICT lets it in: it came over mTLS');
    const text = await metrics();
    const line = text
      .split('\n')
      .find(
        (l) =>
          l.startsWith('istio_tcp_connections_opened_total{reporter="destination"') &&
          l.includes(`source_principal="${CLIENT_ID}"`),
      );
    assert.ok(line, text);
    assert.match(line, new RegExp(`destination_principal="${SERVER_ID}"`));
    assert.match(line, /connection_security_policy="mutual_tls"/);
    assert.match(line, /source_workload="client-0"/, "the HBONE connection left from the client pod's own address");
    const dump = (await (await fetch(`http://127.0.0.1:${zt.ports.admin}/config_dump`)).json()) as {
      workloadState: Record<string, { state: string; info: { name: string } }>;
    };
    assert.deepEqual(Object.keys(dump.workloadState).sort(), ['pod-uid-a', 'pod-uid-b']);
    assert.equal(dump.workloadState['pod-uid-b']!.info.name, 'server-0');
  });

  test("DNS capture: an unchanged client resolves a Service in another namespace through ztunnel's DNS proxy in its pod and reaches it over HBONE", async () => {
    const out = await client.exec('bash', [
      '-c',
      `getent ahostsv4 echo.ns-b | head -1; exec 3<>/dev/tcp/echo.ns-b/80; cat <&3`,
    ]);
    const [resolved, reply] = out.split('\n', 2);
    assert.match(
      resolved ?? '',
      new RegExp(`^${SERVICE_VIP.replaceAll('.', '\\.')}\\s`),
      'the VIP, from ztunnel: the pod has no other nameserver that knows it',
    );
    assert.equal(reply, `app ${STRICT_PORT} saw ${CLIENT_IP}`);
    assert.match(await metrics(), /istio_dns_requests_total\{[^}]*\} [1-9]/);
  });

  test('a new ztunnel binds the same ports in the pod beside the old one (SO_REUSEPORT) and serves the pod once the old one stops its proxy', async () => {
    const next = await startZtunnel(fx.file('mesh.yaml'), NODE, fx.ca, env(), { waitReady: false });
    try {
      await next.inpod!.start('pod-uid-b', SERVER_INFO, openSync(server.path, 'r'));
      const listeners = async (): Promise<number> =>
        (await server.exec('ss', ['-tlnH', 'sport', '=', ':15006']))
          .split('\n')
          .filter((l) => l.includes('0.0.0.0:15006')).length;
      assert.equal(await listeners(), 2, 'both listen');
      zt.inpod!.stop('pod-uid-b');
      assert.equal(await listeners(), 1, "the old one's listeners are closed");
      const s = await connectFrom(client, SERVER_IP, PERMISSIVE_PORT, INPOD_MARK);
      assert.equal(await received(s), `app ${PERMISSIVE_PORT} saw ${CLIENT_IP}`);
    } finally {
      await next.shutdown();
    }
  });
});
