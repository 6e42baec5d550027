import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { socks5Connect, Socks5Error } from '../src/echo/socks5-client.js';
import { startEchoServer, type EchoServer } from '../src/echo/echo-server.js';
import { loadZtunnelConfig } from '../src/ztunnel/config.js';
import type { Ztunnel } from '../src/ztunnel/ztunnel.js';
import { startWaypointProxy } from '../src/waypoint/waypoint-proxy.js';
import { CapturedLogs } from './helpers/captured-logs.js';
import { startZtunnel } from './helpers/in-process.js';
import { meshFixture, sendAndCollect, type MeshFixture } from './helpers/mesh-fixture.js';
import { pythonSkip } from './helpers/python.js';
import { runToExit } from './helpers/run-to-exit.js';
import { pythonXdsServer, type PythonPeer } from './helpers/python-xds-server.js';

const skip = pythonSkip('grpc', 'python3-grpcio');

const XDS_IP = '127.123.0.100';
const WEB_IP = '127.123.0.1';
const ECHO_IP = '127.123.0.2';
const WAYPOINT_IP = '127.123.0.9';
const WAYPOINT_HOST = 'waypoint.backend.svc.cluster.local';

/**
 * web-0 (node n1) calls the echo Service, which uses the waypoint wp-0 (node n3); echo-0 (node n2) backs it, and its
 * namespace allows only the waypoint. The resources come from a python3-grpcio xDS server that is not amesh's istiod.
 */
const RESOURCES = [
  {
    workload: {
      uid: 'Kubernetes//Pod/frontend/web-0',
      name: 'web-0',
      namespace: 'frontend',
      addresses: [WEB_IP],
      service_account: 'web',
      node: 'n1',
    },
  },
  {
    workload: {
      uid: 'Kubernetes//Pod/backend/echo-0',
      name: 'echo-0',
      namespace: 'backend',
      addresses: [ECHO_IP],
      service_account: 'echo',
      node: 'n2',
      services: {
        'backend/echo.backend.svc.cluster.local': [[80, 8080]],
        'backend/echo-http.backend.svc.cluster.local': [[80, 8080]],
      },
    },
  },
  {
    workload: {
      uid: 'Kubernetes//Pod/backend/wp-0',
      name: 'wp-0',
      namespace: 'backend',
      addresses: [WAYPOINT_IP],
      service_account: 'waypoint',
      node: 'n3',
      services: { [`backend/${WAYPOINT_HOST}`]: [[15008, 15008]] },
    },
  },
  {
    service: {
      name: 'echo',
      namespace: 'backend',
      hostname: 'echo.backend.svc.cluster.local',
      vips: ['10.96.0.10'],
      ports: [[80, 8080]],
      waypoint: { namespace: 'backend', hostname: WAYPOINT_HOST },
    },
  },
  {
    service: {
      name: 'waypoint',
      namespace: 'backend',
      hostname: WAYPOINT_HOST,
      vips: ['10.96.0.20'],
      ports: [[15008, 15008]],
    },
  },
  // The same backend behind a port declared HTTP (app_protocol HTTP11 = 1): the waypoint serves it request by request.
  {
    service: {
      name: 'echo-http',
      namespace: 'backend',
      hostname: 'echo-http.backend.svc.cluster.local',
      vips: ['10.96.0.11'],
      ports: [[80, 8080, 1]],
      waypoint: { namespace: 'backend', hostname: WAYPOINT_HOST },
    },
  },
  // The usual way to make the waypoint the only way in: backend's ztunnel allows the waypoint's identity alone. It
  // applies to the waypoint's pod too, which ztunnel does not capture, so the waypoint must not enforce it.
  {
    authorization: {
      name: 'only-via-waypoint',
      namespace: 'backend',
      principals: ['cluster.local/ns/backend/sa/waypoint'],
    },
  },
];

describe(
  'the waypoint proxy relays HBONE from a ztunnel to the destination ztunnel with its own identity',
  { skip },
  () => {
    let fx: MeshFixture;
    let xds: PythonPeer;
    let echo: EchoServer;
    let z1: Ztunnel;
    let z2: Ztunnel;
    let wp: Ztunnel | undefined;
    const destinationLogs = new CapturedLogs('ztunnel');
    const waypointLogs = new CapturedLogs('waypoint');

    const startWaypoint = async (env: Record<string, string>): Promise<Ztunnel> =>
      startWaypointProxy(
        {
          ztunnel: loadZtunnelConfig(
            {
              localCa: fx.ca,
              adminAddress: '127.0.0.1:0',
              metricsAddress: '127.0.0.1:0',
              readinessAddress: '127.0.0.1:0',
            },
            { ...env, POD_NAME: 'wp-0', POD_NAMESPACE: 'backend', INSTANCE_IP: WAYPOINT_IP, NODE_NAME: 'n3' },
          ),
          podUid: 'Kubernetes//Pod/backend/wp-0',
          instanceIp: WAYPOINT_IP,
          gateway: 'backend/waypoint',
        },
        waypointLogs.control,
      );

    /** The waypoint's series of `metric` with reporter="waypoint", checked to carry every one of `labels`. */
    const waypointSeries = async (metric: string, labels: readonly string[]): Promise<string> => {
      const metrics = await (await fetch(`http://127.0.0.1:${wp!.ports.metrics}/stats/prometheus`)).text();
      const line = metrics.split('\n').find((l) => l.startsWith(`${metric}{`) && l.includes('reporter="waypoint"'));
      assert.ok(line !== undefined, metrics);
      for (const label of labels) assert.ok(line.includes(label), `${label} in ${line}`);
      return line;
    };

    before(async () => {
      fx = await meshFixture();
      const served = await pythonXdsServer(fx.dir, XDS_IP, RESOURCES);
      xds = served.peer;
      echo = await startEchoServer(ECHO_IP, 8080);
      z1 = await startZtunnel('', 'n1', fx.ca, served.env);
      z2 = await startZtunnel('', 'n2', fx.ca, served.env, { logs: destinationLogs.control });
      wp = await startWaypoint(served.env);
    });

    after(async () => {
      await Promise.all([z1?.shutdown(), z2?.shutdown(), wp?.shutdown()]);
      await echo?.close();
      xds?.proc.kill();
      await fx?.cleanup();
    });

    test('client -> ztunnel -> waypoint -> ztunnel -> app: the bytes echo back, the app side sees the waypoint, and only the destination enforces the namespace policy', async () => {
      const s = await socks5Connect(WEB_IP, 15080, '10.96.0.10', 80, WEB_IP);
      const payload = Buffer.alloc(200_000, 9);
      assert.ok((await sendAndCollect(s, payload)).equals(payload));
      const line = await destinationLogs.waitFor(
        'the destination ztunnel logged the connection',
        (l) => l['message'] === 'connection complete' && l['direction'] === 'inbound',
      );
      assert.equal(line['src.identity'], 'spiffe://cluster.local/ns/backend/sa/waypoint');
      assert.equal(line['src.addr']?.toString().split(':')[0], WAYPOINT_IP);
      assert.equal(line['dst.hbone_addr'], `${ECHO_IP}:8080`);
      assert.equal(line['bytes_recv'], payload.length);
      // The waypoint reports the connection as Istio's waypoints do: reporter="waypoint", client to destination.
      await waypointSeries('istio_tcp_connections_opened_total', [
        'source_workload="web-0"',
        'source_principal="spiffe://cluster.local/ns/frontend/sa/web"',
        'destination_workload="echo-0"',
        'destination_service="echo.backend.svc.cluster.local"',
        'destination_principal="spiffe://cluster.local/ns/backend/sa/echo"',
      ]);
    });

    test('an HTTP port: curl\'s requests, two on one connection, are each proxied with an x-request-id and counted in istio_requests_total with reporter="waypoint"', async () => {
      const r = await runToExit(
        'curl',
        ['-sS', '--socks5', `${WEB_IP}:15080`, '--interface', WEB_IP, 'http://10.96.0.11/a', 'http://10.96.0.11/b'],
        15_000,
      );
      assert.equal(r.status, 0, r.stderr);
      const answers = r.stdout
        .replace(/}{/g, '}\n{')
        .split('\n')
        .map((l) => JSON.parse(l) as { path: string; peer: string; headers: Record<string, string> });
      assert.deepEqual(
        answers.map((a) => a.path),
        ['/a', '/b'],
      );
      for (const a of answers) {
        assert.equal(a.peer.split(':')[0], WAYPOINT_IP, 'the app sees the waypoint');
        assert.match(a.headers['x-request-id'] ?? '', /^[0-9a-f-]{36}$/);
      }
      assert.notEqual(answers[0]!.headers['x-request-id'], answers[1]!.headers['x-request-id']);
      const line = await waypointSeries('istio_requests_total', [
        'response_code="200"',
        'request_protocol="http"',
        'source_workload="web-0"',
        'destination_workload="echo-0"',
        'destination_service="echo-http.backend.svc.cluster.local"',
      ]);
      assert.equal(line.split(' ').at(-1), '2');
      // A POST's body is carried through the waypoint and counted in istio_request_bytes.
      const posted = await runToExit(
        'curl',
        [
          '-sS',
          '--socks5',
          `${WEB_IP}:15080`,
          '--interface',
          WEB_IP,
          '--data-binary',
          'x'.repeat(100_000),
          'http://10.96.0.11/post',
        ],
        15_000,
      );
      assert.equal(posted.status, 0, posted.stderr);
      assert.equal((JSON.parse(posted.stdout) as { method: string }).method, 'POST');
      const sum = await waypointSeries('istio_request_bytes_sum', ['response_code="200"']);
      assert.ok(Number(sum.split(' ').at(-1)) > 100_000, sum);
    });

    test('fail closed: with the waypoint down, traffic bound to it fails instead of going around it', async () => {
      await wp!.shutdown();
      wp = undefined;
      await assert.rejects(socks5Connect(WEB_IP, 15080, '10.96.0.10', 80, WEB_IP), (e) => e instanceof Socks5Error);
    });
  },
);
