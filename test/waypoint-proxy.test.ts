import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { socks5Connect, Socks5Error } from '../src/echo/socks5-client.js';
import { startEchoServer, type EchoServer } from '../src/echo/echo-server.js';
import type { LogControl } from '../src/lib/log.js';
import { loadZtunnelConfig } from '../src/ztunnel/config.js';
import type { Ztunnel } from '../src/ztunnel/ztunnel.js';
import { startWaypointProxy } from '../src/waypoint/waypoint-proxy.js';
import { CapturedLogs } from './helpers/captured-logs.js';
import { startZtunnel } from './helpers/in-process.js';
import { meshFixture, sendAndCollect, waitFor, type MeshFixture } from './helpers/mesh-fixture.js';
import { pythonSkip } from './helpers/python.js';
import { runToExit } from './helpers/run-to-exit.js';
import { pythonXdsServer, type PythonPeer } from './helpers/python-xds-server.js';

const skip = pythonSkip('grpc', 'python3-grpcio');
/** The waypoint's own resource is encoded by python3-protobuf, from what protoc compiles of amesh's proto. */
const skipL7 =
  skip ||
  pythonSkip('google.protobuf', 'python3-protobuf') ||
  (spawnSync('protoc', ['--version']).status === 0
    ? false
    : 'protoc is not installed (apt-get install protobuf-compiler libprotobuf-dev; .ci/run does this)');

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

/** The waypoint wp-0 (node n3) of the Gateway backend/waypoint on `ip`, using the xDS server `env` names. */
function startWaypoint(ca: string, ip: string, env: Record<string, string>, logs: LogControl): Promise<Ztunnel> {
  return startWaypointProxy(
    {
      ztunnel: loadZtunnelConfig(
        {
          localCa: ca,
          adminAddress: '127.0.0.1:0',
          metricsAddress: '127.0.0.1:0',
          readinessAddress: '127.0.0.1:0',
        },
        { ...env, POD_NAME: 'wp-0', POD_NAMESPACE: 'backend', INSTANCE_IP: ip, NODE_NAME: 'n3' },
      ),
      podUid: 'Kubernetes//Pod/backend/wp-0',
      instanceIp: ip,
      gateway: 'backend/waypoint',
    },
    logs,
  );
}

/** The waypoint's series of `metric` with reporter="waypoint". */
async function waypointLines(wp: Ztunnel, metric: string): Promise<string[]> {
  const metrics = await (await fetch(`http://127.0.0.1:${wp.ports.metrics}/stats/prometheus`)).text();
  return metrics.split('\n').filter((l) => l.startsWith(`${metric}{`) && l.includes('reporter="waypoint"'));
}

/** The one of them that carries every one of `labels`; fails, listing them, when there is none. */
async function waypointSeries(wp: Ztunnel, metric: string, labels: readonly string[]): Promise<string> {
  const lines = await waypointLines(wp, metric);
  const line = lines.find((l) => labels.every((x) => l.includes(x)));
  assert.ok(line !== undefined, `no ${metric} with ${labels.join(', ')}; there are:\n${lines.join('\n')}`);
  return line;
}

/** A counter's value in the waypoint's series with `labels`; 0 while there is no such series. */
async function waypointCount(wp: Ztunnel, metric: string, labels: readonly string[]): Promise<number> {
  const line = (await waypointLines(wp, metric)).find((l) => labels.every((x) => l.includes(x)));
  return line === undefined ? 0 : Number(line.split(' ').at(-1));
}

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

    before(async () => {
      fx = await meshFixture();
      const served = await pythonXdsServer(fx.dir, XDS_IP, RESOURCES);
      xds = served.peer;
      echo = await startEchoServer(ECHO_IP, 8080);
      z1 = await startZtunnel('', 'n1', fx.ca, served.env);
      z2 = await startZtunnel('', 'n2', fx.ca, served.env, { logs: destinationLogs.control });
      wp = await startWaypoint(fx.ca, WAYPOINT_IP, served.env, waypointLogs.control);
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
      await waypointSeries(wp!, 'istio_tcp_connections_opened_total', [
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
      const line = await waypointSeries(wp!, 'istio_requests_total', [
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
      const sum = await waypointSeries(wp!, 'istio_request_bytes_sum', ['response_code="200"']);
      assert.ok(Number(sum.split(' ').at(-1)) > 100_000, sum);
    });

    test('fail closed: with the waypoint down, traffic bound to it fails instead of going around it', async () => {
      await wp!.shutdown();
      wp = undefined;
      await assert.rejects(socks5Connect(WEB_IP, 15080, '10.96.0.10', 80, WEB_IP), (e) => e instanceof Socks5Error);
    });
  },
);

const L7_XDS_IP = '127.123.1.100';
const L7_WEB_IP = '127.123.1.1';
const L7_OTHER_IP = '127.123.1.4';
const L7_V1_IP = '127.123.1.2';
const L7_V2_IP = '127.123.1.3';
const L7_WAYPOINT_IP = '127.123.1.9';
const svcHost = (name: string): string => `${name}.backend.svc.cluster.local`;
const WEB_PRINCIPAL = 'cluster.local/ns/frontend/sa/web';

/** A Service of namespace backend on `vip`, port 80 to 8080 declared HTTP, with the waypoint unless told otherwise. */
const httpService = (name: string, vip: string, waypoint = true): object => ({
  service: {
    name,
    namespace: 'backend',
    hostname: svcHost(name),
    vips: [vip],
    ports: [[80, 8080, 1]],
    ...(waypoint ? { waypoint: { namespace: 'backend', hostname: WAYPOINT_HOST } } : {}),
  },
});

/** A route forwarding every request it takes to the Service `name`, port 80. */
const forwardTo = (name: string): object => ({
  forward: { backends: [{ namespace: 'backend', hostname: svcHost(name), port: 80, weight: 1 }] },
});

/**
 * Two clients on node n1, web-0 (frontend/web) and other-0 (frontend/other), call Services bound to the waypoint
 * wp-0 (node n3); echo-v1-0 and echo-v2-0 (node n2) back them and name themselves in their answers. The waypoint's
 * own resource, backend/waypoint, is what an HTTPRoute and three AuthorizationPolicies become in istiod:
 * - echo (both pods): `x-version: v2` goes to the Service echo-v2, everything else to echo-v1;
 * - echo-exact (v1): one route, for the exact path /only;
 * - DENY DELETE on /admin* for every request the waypoint serves;
 * - ALLOW for the Service echo-guarded (v1) from web's identity only.
 */
const L7_RESOURCES = [
  {
    workload: {
      uid: 'Kubernetes//Pod/frontend/web-0',
      name: 'web-0',
      namespace: 'frontend',
      addresses: [L7_WEB_IP],
      service_account: 'web',
      node: 'n1',
    },
  },
  {
    workload: {
      uid: 'Kubernetes//Pod/frontend/other-0',
      name: 'other-0',
      namespace: 'frontend',
      addresses: [L7_OTHER_IP],
      service_account: 'other',
      node: 'n1',
    },
  },
  {
    workload: {
      uid: 'Kubernetes//Pod/backend/echo-v1-0',
      name: 'echo-v1-0',
      namespace: 'backend',
      addresses: [L7_V1_IP],
      service_account: 'echo',
      node: 'n2',
      services: Object.fromEntries(
        ['echo', 'echo-v1', 'echo-exact', 'echo-guarded'].map((n) => [`backend/${svcHost(n)}`, [[80, 8080]]]),
      ),
    },
  },
  {
    workload: {
      uid: 'Kubernetes//Pod/backend/echo-v2-0',
      name: 'echo-v2-0',
      namespace: 'backend',
      addresses: [L7_V2_IP],
      service_account: 'echo',
      node: 'n2',
      services: Object.fromEntries(['echo', 'echo-v2'].map((n) => [`backend/${svcHost(n)}`, [[80, 8080]]])),
    },
  },
  {
    workload: {
      uid: 'Kubernetes//Pod/backend/wp-0',
      name: 'wp-0',
      namespace: 'backend',
      addresses: [L7_WAYPOINT_IP],
      service_account: 'waypoint',
      node: 'n3',
      services: { [`backend/${WAYPOINT_HOST}`]: [[15008, 15008]] },
    },
  },
  httpService('echo', '10.96.1.10'),
  httpService('echo-v1', '10.96.1.11', false),
  httpService('echo-v2', '10.96.1.12', false),
  httpService('echo-exact', '10.96.1.13'),
  httpService('echo-guarded', '10.96.1.14'),
  {
    service: {
      name: 'waypoint',
      namespace: 'backend',
      hostname: WAYPOINT_HOST,
      vips: ['10.96.1.20'],
      ports: [[15008, 15008]],
    },
  },
  {
    authorization: {
      name: 'only-via-waypoint',
      namespace: 'backend',
      principals: ['cluster.local/ns/backend/sa/waypoint'],
    },
  },
  {
    waypoint: {
      name: 'backend/waypoint',
      message: {
        services: [
          {
            namespace: 'backend',
            hostname: svcHost('echo'),
            port: 80,
            routes: [
              {
                name: 'backend/echo-versions.0',
                matches: [{ headers: [{ name: 'x-version', exact: 'v2' }] }],
                ...forwardTo('echo-v2'),
              },
              { name: 'backend/echo-versions.1', ...forwardTo('echo-v1') },
            ],
          },
          {
            namespace: 'backend',
            hostname: svcHost('echo-exact'),
            routes: [
              { name: 'backend/echo-exact.0', matches: [{ path: { exact: '/only' } }], ...forwardTo('echo-v1') },
            ],
          },
        ],
        policies: [
          {
            name: 'backend/no-admin-delete',
            action: 'DENY',
            rules: [{ to: [{ methods: [{ exact: 'DELETE' }], paths: [{ prefix: '/admin' }] }] }],
          },
          {
            name: 'backend/guarded-from-web',
            action: 'ALLOW',
            services: [`backend/${svcHost('echo-guarded')}`],
            rules: [{ from: [{ principals: [{ exact: WEB_PRINCIPAL }] }] }],
          },
        ],
      },
    },
  },
];

/** A line test/interop/xds_server_grpcio.py prints: a request it received, or the names of a Waypoint response. */
interface XdsServerLine {
  readonly type_url?: string;
  readonly nonce?: string;
  readonly error?: boolean;
  readonly subscribe?: readonly string[];
  readonly sent?: string;
  readonly names?: readonly string[];
}

/** curl (HTTP/1.1) from the workload at `from`, through its ztunnel's SOCKS5 port: the status and the body. */
async function curl(from: string, url: string, options: string[] = []): Promise<{ status: number; body: string }> {
  const r = await runToExit(
    'curl',
    ['-sS', '--http1.1', '--socks5', `${from}:15080`, '--interface', from, '-w', '\n%{http_code}', ...options, url],
    15_000,
  );
  assert.equal(r.status, 0, r.stderr);
  const cut = r.stdout.lastIndexOf('\n');
  return { status: Number(r.stdout.slice(cut + 1)), body: r.stdout.slice(0, cut) };
}

/** Which echo pod answered: the name it gives in its JSON answer. */
const servedBy = (r: { status: number; body: string }): string => {
  assert.equal(r.status, 200, r.body);
  return (JSON.parse(r.body) as { hostname: string }).hostname;
};

describe(
  "the waypoint applies its own resource from a foreign xDS server: HTTPRoute routes and AuthorizationPolicies, to curl's requests",
  { skip: skipL7 },
  () => {
    let fx: MeshFixture;
    let xds: PythonPeer;
    let echoes: EchoServer[] = [];
    let z1: Ztunnel;
    let z2: Ztunnel;
    let wp: Ztunnel;
    const waypointLogs = new CapturedLogs('waypoint');

    /** What the xDS server printed: the requests it received and the Waypoint responses it sent. */
    const xdsLog = (): XdsServerLine[] =>
      xds
        .lines()
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as XdsServerLine);

    before(async () => {
      fx = await meshFixture();
      const served = await pythonXdsServer(fx.dir, L7_XDS_IP, L7_RESOURCES);
      xds = served.peer;
      echoes = [await startEchoServer(L7_V1_IP, 8080, 'echo-v1'), await startEchoServer(L7_V2_IP, 8080, 'echo-v2')];
      z1 = await startZtunnel('', 'n1', fx.ca, served.env);
      z2 = await startZtunnel('', 'n2', fx.ca, served.env);
      wp = await startWaypoint(fx.ca, L7_WAYPOINT_IP, served.env, waypointLogs.control);
      await waypointLogs.waitFor(
        'the waypoint applied its resource',
        (l) => l['message'] === 'waypoint config applied',
      );
    });

    after(async () => {
      await Promise.all([z1?.shutdown(), z2?.shutdown(), wp?.shutdown()]);
      await Promise.all(echoes.map((e) => e.close()));
      xds?.proc.kill();
      await fx?.cleanup();
    });

    test("the waypoint subscribes to its Gateway's resource by name, is sent that one alone, and ACKs it", async () => {
      const wanted = 'type.googleapis.com/amesh.waypoint.v1.Waypoint';
      await waitFor('the ACK of the Waypoint resource', () =>
        xdsLog().some((l) => l.type_url === wanted && l.nonce !== '' && l.subscribe === undefined),
      );
      const log = xdsLog();
      assert.deepEqual(
        log.filter((l) => l.type_url === wanted && l.nonce === '').map((l) => l.subscribe),
        [['backend/waypoint']],
      );
      assert.deepEqual(
        log.filter((l) => l.sent === wanted).map((l) => l.names),
        [['backend/waypoint']],
      );
      assert.ok(
        log.filter((l) => l.type_url === wanted && l.nonce !== '').every((l) => l.error === false),
        JSON.stringify(log),
      );
      const applied = waypointLogs.lines.find((l) => l['message'] === 'waypoint config applied');
      assert.equal(applied?.['routeTables'], 2);
      assert.equal(applied?.['policies'], 2);
    });

    test('an HTTPRoute header match: x-version: v2 is routed to the v2 Service, every other request to v1', async () => {
      for (let i = 0; i < 4; i++) {
        assert.equal(
          servedBy(await curl(L7_WEB_IP, `http://10.96.1.10/items/${i}`, ['-H', 'x-version: v2'])),
          'echo-v2',
        );
        assert.equal(servedBy(await curl(L7_WEB_IP, `http://10.96.1.10/items/${i}`)), 'echo-v1');
        assert.equal(
          servedBy(await curl(L7_WEB_IP, `http://10.96.1.10/items/${i}`, ['-H', 'x-version: v3'])),
          'echo-v1',
        );
      }
    });

    test('a path no route of the Service matches is answered 404 by the waypoint, a matching one is forwarded', async () => {
      assert.equal(servedBy(await curl(L7_WEB_IP, 'http://10.96.1.13/only')), 'echo-v1');
      for (const path of ['/other', '/only/more', '/']) {
        const r = await curl(L7_WEB_IP, `http://10.96.1.13${path}`);
        assert.equal(r.status, 404, `${path}: ${r.body}`);
      }
      const line = await waypointSeries(wp, 'istio_requests_total', [
        'response_code="404"',
        'response_flags="NR"',
        `destination_service="${svcHost('echo-exact')}"`,
      ]);
      assert.equal(line.split(' ').at(-1), '3');
    });

    test('a DENY AuthorizationPolicy on DELETE /admin*: DELETE /admin gets 403 RBAC: access denied; GET /admin and DELETE elsewhere pass', async () => {
      for (const path of ['/admin', '/admin/users/7']) {
        const denied = await curl(L7_WEB_IP, `http://10.96.1.10${path}`, ['-X', 'DELETE']);
        assert.deepEqual(denied, { status: 403, body: 'RBAC: access denied' }, path);
      }
      const get = await curl(L7_WEB_IP, 'http://10.96.1.10/admin');
      assert.equal(servedBy(get), 'echo-v1');
      assert.equal((JSON.parse(get.body) as { method: string }).method, 'GET');
      const elsewhere = await curl(L7_WEB_IP, 'http://10.96.1.10/items/1', ['-X', 'DELETE']);
      assert.equal(servedBy(elsewhere), 'echo-v1');
      assert.equal((JSON.parse(elsewhere.body) as { method: string }).method, 'DELETE');
      await waypointLogs.waitFor(
        "the waypoint logged the denial's reason",
        (l) => l['message'] === 'waypoint: denied by authorization policy' && l['path'] === '/admin/users/7',
      );
    });

    test('an ALLOW AuthorizationPolicy on a Service admits its principal alone: web is served, another identity gets 403, and Services it does not cover stay open', async () => {
      assert.equal(servedBy(await curl(L7_WEB_IP, 'http://10.96.1.14/guarded')), 'echo-v1');
      const denied = await curl(L7_OTHER_IP, 'http://10.96.1.14/guarded');
      assert.deepEqual(denied, { status: 403, body: 'RBAC: access denied' });
      assert.equal(servedBy(await curl(L7_OTHER_IP, 'http://10.96.1.10/open')), 'echo-v1');
    });

    test('istio_requests_total with reporter="waypoint" counts each denied request as 403 and each served one as 200', async () => {
      const denied = [
        'response_code="403"',
        'source_workload="other-0"',
        'source_principal="spiffe://cluster.local/ns/frontend/sa/other"',
        `destination_service="${svcHost('echo-guarded')}"`,
      ];
      const served = [
        'response_code="200"',
        'source_workload="web-0"',
        'source_principal="spiffe://cluster.local/ns/frontend/sa/web"',
        'destination_workload="echo-v1-0"',
        `destination_service="${svcHost('echo-guarded')}"`,
      ];
      const before403 = await waypointCount(wp, 'istio_requests_total', denied);
      const before200 = await waypointCount(wp, 'istio_requests_total', served);
      for (let i = 0; i < 3; i++) assert.equal((await curl(L7_OTHER_IP, 'http://10.96.1.14/count')).status, 403);
      for (let i = 0; i < 2; i++) assert.equal((await curl(L7_WEB_IP, 'http://10.96.1.14/count')).status, 200);
      // A forwarded request is counted once both bodies are done, which may be just after curl has its answer.
      await waitFor(
        'the counts',
        async () =>
          (await waypointCount(wp, 'istio_requests_total', denied)) === before403 + 3 &&
          (await waypointCount(wp, 'istio_requests_total', served)) === before200 + 2,
      );
      // The DENY policy's refusals are counted as well, against the Service the request was for.
      await waypointSeries(wp, 'istio_requests_total', [
        'response_code="403"',
        'source_workload="web-0"',
        `destination_service="${svcHost('echo')}"`,
      ]);
    });
  },
);
