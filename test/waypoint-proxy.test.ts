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
import {
  pythonExtAuthzServer,
  pythonFlakyHttpServer,
  pythonXdsServer,
  type PythonPeer,
} from './helpers/python-xds-server.js';

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
/** The ext_authz providers' pods (node n2): python3-grpcio's, http.server's, and one where nothing listens. */
const L7_PY_GRPC_IP = '127.123.1.5';
const L7_PY_HTTP_IP = '127.123.1.6';
const L7_PY_DOWN_IP = '127.123.1.7';
/** An upstream that fails on request (python's http.server), for retries and mirrors: pod flaky-0 (node n2). */
const L7_FLAKY_IP = '127.123.1.8';
const svcHost = (name: string): string => `${name}.backend.svc.cluster.local`;
const authzHost = (name: string): string => `${name}.authz.svc.cluster.local`;
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

/** A route forwarding the requests whose path starts with `path.prefix` to the Service `name` under `trafficPolicy`. */
const withPolicy = (route: string, path: { prefix: string }, name: string, trafficPolicy: object): object => ({
  name: `backend/${route}.0`,
  matches: [{ path }],
  forward: { backends: [{ namespace: 'backend', hostname: svcHost(name), port: 80, weight: 1, trafficPolicy }] },
});

/** A route forwarding every request it takes to the Service `name`, port 80. */
const forwardTo = (name: string): object => ({
  forward: { backends: [{ namespace: 'backend', hostname: svcHost(name), port: 80, weight: 1 }] },
});

/**
 * An ext_authz provider's pod `<name>-0` (node n2) and its Service `name` of namespace authz on `vip`, port
 * `service` to `target`. Not bound to the waypoint: the waypoint reaches it over HBONE through n2's ztunnel.
 */
const providerResources = (name: string, ip: string, vip: string, service: number, target: number): object[] => [
  {
    workload: {
      uid: `Kubernetes//Pod/authz/${name}-0`,
      name: `${name}-0`,
      namespace: 'authz',
      addresses: [ip],
      service_account: name,
      node: 'n2',
      services: { [`authz/${authzHost(name)}`]: [[service, target]] },
    },
  },
  { service: { name, namespace: 'authz', hostname: authzHost(name), vips: [vip], ports: [[service, target]] } },
];

/** A CUSTOM AuthorizationPolicy sending the requests whose path starts with `prefix` to the provider `provider`. */
const custom = (provider: string, prefix: string): object => ({
  name: `backend/custom-${provider}`,
  action: 'CUSTOM',
  provider,
  rules: [{ to: [{ paths: [{ prefix }] }] }],
});

/** An ext_authz provider (meshConfig extensionProviders, as istiod sends it) on the Service `service` of authz. */
const provider = (name: string, service: string, port: number, rest: object): object => ({
  name,
  namespace: 'authz',
  hostname: authzHost(service),
  port,
  ...rest,
});

/**
 * Two clients on node n1, web-0 (frontend/web) and other-0 (frontend/other), call Services bound to the waypoint
 * wp-0 (node n3); echo-v1-0 and echo-v2-0 (node n2) back them and name themselves in their answers. The waypoint's
 * own resource, backend/waypoint, is what an HTTPRoute and three AuthorizationPolicies become in istiod:
 * - echo (both pods): `x-version: v2` goes to the Service echo-v2, everything else to echo-v1;
 * - echo-exact (v1): one route, for the exact path /only;
 * - DENY DELETE on /admin* for every request the waypoint serves;
 * - ALLOW for the Service echo-guarded (v1) from web's identity only;
 * - CUSTOM, by path prefix, for ext_authz providers amesh did not write, Services of namespace authz (node n2):
 *   /py-grpc to python3-grpcio's Envoy Check (py-grpc, port 9000 to 9001), /py-http to python's http.server (py-http,
 *   port 8000 to 8001); /down-closed, /down-503 and /down-open to providers on the Service py-down, whose pod has no
 *   listener: statusOnError unset, 503, and failOpen.
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
        ['echo', 'echo-v1', 'echo-exact', 'echo-guarded', 'mixed', 'sticky'].map((n) => [
          `backend/${svcHost(n)}`,
          [[80, 8080]],
        ]),
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
      services: Object.fromEntries(['echo', 'echo-v2', 'sticky'].map((n) => [`backend/${svcHost(n)}`, [[80, 8080]]])),
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
  ...providerResources('py-grpc', L7_PY_GRPC_IP, '10.96.1.30', 9000, 9001),
  ...providerResources('py-http', L7_PY_HTTP_IP, '10.96.1.31', 8000, 8001),
  ...providerResources('py-down', L7_PY_DOWN_IP, '10.96.1.32', 9000, 9001),
  {
    workload: {
      uid: 'Kubernetes//Pod/backend/flaky-0',
      name: 'flaky-0',
      namespace: 'backend',
      addresses: [L7_FLAKY_IP],
      service_account: 'flaky',
      node: 'n2',
      services: Object.fromEntries(['flaky', 'mixed'].map((n) => [`backend/${svcHost(n)}`, [[80, 8080]]])),
    },
  },
  httpService('flaky', '10.96.1.15', false),
  httpService('mixed', '10.96.1.16', false),
  httpService('sticky', '10.96.1.17'),
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
              {
                name: 'backend/echo-exact.1',
                matches: [{ path: { exact: '/faulty' } }],
                ...forwardTo('echo-v1'),
                fault: { abort: { httpStatus: 503, percentage: 100 } },
              },
              {
                name: 'backend/echo-exact.2',
                matches: [{ path: { exact: '/slow' } }],
                ...forwardTo('echo-v1'),
                fault: { delay: { fixedDelay: '0.05s', percentage: 100 } },
              },
              {
                name: 'backend/retries.0',
                matches: [{ path: { prefix: '/fail' } }],
                ...forwardTo('flaky'),
                retries: { attempts: 2, retryOn: ['5xx'] },
              },
              { name: 'backend/retries.1', matches: [{ path: { prefix: '/default' } }], ...forwardTo('flaky') },
              {
                name: 'backend/retries.2',
                matches: [{ path: { prefix: '/hang' } }],
                ...forwardTo('flaky'),
                retries: { attempts: 1, retryOn: ['reset'], perTryTimeout: '0.3s' },
              },
              {
                name: 'backend/mirrored.0',
                matches: [{ path: { prefix: '/mirrored' } }],
                ...forwardTo('echo-v1'),
                mirrors: [{ backend: { namespace: 'backend', hostname: svcHost('flaky'), port: 80 }, percentage: 100 }],
              },
              {
                name: 'backend/subsets.0',
                matches: [{ path: { exact: '/subset-v2' } }],
                forward: {
                  backends: [
                    {
                      namespace: 'backend',
                      hostname: svcHost('echo'),
                      port: 80,
                      weight: 1,
                      subset: 'v2',
                      endpoints: ['Kubernetes//Pod/backend/echo-v2-0'],
                    },
                  ],
                },
              },
              {
                name: 'backend/subsets.1',
                matches: [{ path: { exact: '/subset-none' } }],
                forward: {
                  backends: [{ namespace: 'backend', hostname: svcHost('echo'), port: 80, weight: 1, subset: 'v3' }],
                },
              },
              withPolicy('sticky-header', { prefix: '/sticky' }, 'echo', {
                loadBalancer: { httpHeaderName: 'x-user' },
              }),
              withPolicy('sticky-cookie', { prefix: '/cookie' }, 'echo', {
                loadBalancer: { httpCookie: { name: 'sticky', path: '/', ttl: '60s' } },
              }),
              withPolicy('client-gone', { prefix: '/gone' }, 'flaky', {
                outlierDetection: { consecutive5xxErrors: 1, maxEjectionPercent: 100 },
              }),
              withPolicy('breakers', { prefix: '/cb' }, 'flaky', {
                connectionPool: { maxConnections: 1, maxPendingRequests: 1 },
              }),
              withPolicy('outliers', { prefix: '/od' }, 'mixed', {
                loadBalancer: { simple: 'ROUND_ROBIN' },
                outlierDetection: { consecutive5xxErrors: 2, baseEjectionTime: '60s', maxEjectionPercent: 50 },
              }),
            ],
          },
        ],
        accessLog: true,
        // A Service with no route of its own, whose DestinationRule balances by a header.
        servicePolicies: [
          {
            namespace: 'backend',
            hostname: svcHost('sticky'),
            port: 80,
            trafficPolicy: { loadBalancer: { httpHeaderName: 'x-user' } },
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
          custom('py-grpc', '/py-grpc'),
          custom('py-http', '/py-http'),
          custom('py-down', '/down-closed'),
          custom('py-down-503', '/down-503'),
          custom('py-down-open', '/down-open'),
        ],
        extAuthzProviders: [
          provider('py-grpc', 'py-grpc', 9000, { grpc: {} }),
          provider('py-http', 'py-http', 8000, {
            http: {
              includeRequestHeadersInCheck: [{ exact: 'x-py-authz' }],
              headersToUpstreamOnAllow: [{ exact: 'x-py-checked' }],
              headersToDownstreamOnDeny: [{ exact: 'x-py-verdict' }],
            },
          }),
          provider('py-down', 'py-down', 9000, { grpc: {} }),
          provider('py-down-503', 'py-down', 9000, { statusOnError: 503, grpc: {} }),
          provider('py-down-open', 'py-down', 9000, { failOpen: true, grpc: {} }),
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

/** curl as above, with the response's headers too (names in lower case). */
async function curlWithHeaders(
  from: string,
  url: string,
  options: string[] = [],
): Promise<{ status: number; headers: Record<string, string>; body: string }> {
  const r = await runToExit(
    'curl',
    ['-sS', '--http1.1', '--socks5', `${from}:15080`, '--interface', from, '-D', '-', ...options, url],
    15_000,
  );
  assert.equal(r.status, 0, r.stderr);
  const cut = r.stdout.indexOf('\r\n\r\n');
  const [statusLine = '', ...lines] = r.stdout.slice(0, cut).split('\r\n');
  const headers = Object.fromEntries(
    lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
  );
  return { status: Number(statusLine.split(' ')[1]), headers, body: r.stdout.slice(cut + 4) };
}

/** What the echo pod saw of a request it answered. */
const echoed = (r: { status: number; body: string }): { method: string; headers: Record<string, string> } => {
  assert.equal(r.status, 200, r.body);
  return JSON.parse(r.body) as { method: string; headers: Record<string, string> };
};

/** A line test/interop/ext_authz_grpcio_server.py prints: one check it received (principal: gRPC only). */
interface ProviderCheck {
  readonly principal?: string;
  readonly id?: string;
  readonly method: string;
  readonly path: string;
  readonly host?: string;
  readonly headers: Record<string, string>;
  readonly verdict: 'allowed' | 'denied';
}

/** The check `peer` logged for `path`, once it has. */
async function checkSeen(peer: PythonPeer, path: string): Promise<ProviderCheck> {
  const find = (): ProviderCheck | undefined =>
    peer
      .lines()
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as ProviderCheck)
      .find((c) => c.path === path);
  await waitFor(`the provider's check of ${path}`, () => find() !== undefined);
  return find()!;
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
    let pyGrpc: PythonPeer;
    let pyHttp: PythonPeer;
    let flaky: PythonPeer;
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
      pyGrpc = await pythonExtAuthzServer('grpc', L7_PY_GRPC_IP, 9001);
      pyHttp = await pythonExtAuthzServer('http', L7_PY_HTTP_IP, 8001);
      flaky = await pythonFlakyHttpServer(L7_FLAKY_IP, 8080);
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
      pyGrpc?.proc.kill();
      pyHttp?.proc.kill();
      flaky?.proc.kill();
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
      assert.equal(applied?.['policies'], 7);
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

    test("a VirtualService's fault injection: an abort is answered by the waypoint with its status and Envoy's text (FI); a delayed request is served, flagged DI; with meshConfig.accessLogFile each request is in the access log", async () => {
      const aborted = await curl(L7_WEB_IP, 'http://10.96.1.13/faulty');
      assert.deepEqual([aborted.status, aborted.body], [503, 'fault filter abort']);
      assert.equal(servedBy(await curl(L7_WEB_IP, 'http://10.96.1.13/slow')), 'echo-v1');
      // With meshConfig.accessLogFile set, each request has its line in the access log, with Envoy's fields.
      const logged = waypointLogs.lines.find(
        (l) => l['message'] === 'request complete' && l['path'] === '/faulty' && l['scope'] === 'access',
      );
      assert.deepEqual(
        logged && [logged['method'], logged['response_code'], logged['response_flags'], logged['route_name']],
        ['GET', 503, 'FI', 'backend/echo-exact.1'],
      );
      // The abort is counted against the Service asked for; the delayed request against the one it was routed to.
      for (const [code, flag, service] of [
        ['503', 'FI', 'echo-exact'],
        ['200', 'DI', 'echo-v1'],
      ] as const)
        assert.match(
          await waypointSeries(wp, 'istio_requests_total', [
            `response_code="${code}"`,
            `response_flags="${flag}"`,
            `destination_service="${svcHost(service)}"`,
          ]),
          / 1$/,
        );
    });

    /** The requests python's flaky server received for `path`. */
    const flakySaw = (path: string): { method: string; host: string; body: number }[] =>
      flaky
        .lines()
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as { method: string; path: string; host: string; body: number })
        .filter((l) => l.path === path)
        .map(({ method, host, body }) => ({ method, host, body }));

    test("retries after a response, as Envoy's: a route retrying 5xx tries a 503 again (the body sent again each time) and answers the first success; past its attempts the last 503 goes back; Istio's default retries no 503", async () => {
      const ok = await curl(L7_WEB_IP, 'http://10.96.1.13/fail/a/2', ['--data-binary', 'y'.repeat(5000)]);
      assert.equal(ok.status, 200, ok.body);
      assert.deepEqual(JSON.parse(ok.body), { path: '/fail/a/2', attempt: 3, body: 5000 });
      assert.deepEqual(
        flakySaw('/fail/a/2').map((r) => [r.method, r.body]),
        [
          ['POST', 5000],
          ['POST', 5000],
          ['POST', 5000],
        ],
      );
      const exhausted = await curl(L7_WEB_IP, 'http://10.96.1.13/fail/b/3');
      assert.deepEqual([exhausted.status, exhausted.body], [503, 'failing']);
      assert.equal(flakySaw('/fail/b/3').length, 3, 'the first attempt and 2 retries');
      const unretried = await curl(L7_WEB_IP, 'http://10.96.1.13/default/fail/c/1');
      assert.deepEqual([unretried.status, unretried.body], [503, 'failing']);
      assert.equal(flakySaw('/default/fail/c/1').length, 1, "Istio's default policy retries no 503");
    });

    test('a per-try timeout ends an attempt that has no answer yet, and the retry it allows is answered', async () => {
      const r = await curl(L7_WEB_IP, 'http://10.96.1.13/hang/d/1');
      assert.equal(r.status, 200, r.body);
      assert.equal((JSON.parse(r.body) as { attempt: number }).attempt, 2);
      assert.equal(flakySaw('/hang/d/1').length, 2);
      assert.equal(r.status, 200);
      const line = waypointLogs.lines.find(
        (l) => l['message'] === 'request complete' && l['path'] === '/hang/d/1' && l['scope'] === 'access',
      );
      assert.equal(line?.['response_code'], 200);
    });

    test("a mirror gets a copy of each request, body included, with -shadow on its host, while the client gets the route's answer", async () => {
      const r = await curl(L7_WEB_IP, 'http://10.96.1.13/mirrored/1', ['--data-binary', 'z'.repeat(3000)]);
      assert.equal(servedBy(r), 'echo-v1');
      await waitFor('the mirror received its copy', () => flakySaw('/mirrored/1').length === 1);
      assert.deepEqual(flakySaw('/mirrored/1'), [{ method: 'POST', host: '10.96.1.13-shadow', body: 3000 }]);
    });

    test('a DestinationRule subset: the request goes only to the workloads istiod listed for it; a subset with none is answered 503 no healthy upstream', async () => {
      for (let i = 0; i < 6; i++)
        assert.equal(servedBy(await curl(L7_WEB_IP, 'http://10.96.1.13/subset-v2')), 'echo-v2');
      const none = await curl(L7_WEB_IP, 'http://10.96.1.13/subset-none');
      assert.deepEqual([none.status, none.body], [503, 'no healthy upstream']);
    });

    test('a DestinationRule consistentHash: requests with one x-user header value, or one cookie, keep their pod; a cookie with a ttl the client lacks is set by the waypoint', async () => {
      const pods = new Set<string>();
      for (const user of ['ann', 'bob', 'cy', 'dee', 'eve', 'fay']) {
        const first = servedBy(await curl(L7_WEB_IP, 'http://10.96.1.13/sticky', ['-H', `x-user: ${user}`]));
        pods.add(first);
        for (let i = 0; i < 3; i++)
          assert.equal(servedBy(await curl(L7_WEB_IP, 'http://10.96.1.13/sticky', ['-H', `x-user: ${user}`])), first);
      }
      assert.deepEqual([...pods].sort(), ['echo-v1', 'echo-v2'], 'the users spread over both pods');
      const fresh = await curlWithHeaders(L7_WEB_IP, 'http://10.96.1.13/cookie');
      assert.match(fresh.headers['set-cookie'] ?? '', /^sticky="[0-9a-f]{16}"; Max-Age=60; Path=\/; HttpOnly$/);
      const cookie = (fresh.headers['set-cookie'] ?? '').split(';')[0]!;
      const pod = (JSON.parse(fresh.body) as { hostname: string }).hostname;
      for (let i = 0; i < 4; i++) {
        const again = await curlWithHeaders(L7_WEB_IP, 'http://10.96.1.13/cookie', ['-H', `cookie: ${cookie}`]);
        assert.equal((JSON.parse(again.body) as { hostname: string }).hostname, pod);
        assert.equal(again.headers['set-cookie'], undefined, 'a client with the cookie gets no other');
      }
    });

    test('a DestinationRule on a Service with no route of its own: the requests forwarded to it as they are keep their pod by the x-user header', async () => {
      const pods = new Set<string>();
      for (const user of ['ann', 'bob', 'cy', 'dee', 'eve', 'fay']) {
        const first = servedBy(await curl(L7_WEB_IP, 'http://10.96.1.17/', ['-H', `x-user: ${user}`]));
        pods.add(first);
        for (let i = 0; i < 3; i++)
          assert.equal(servedBy(await curl(L7_WEB_IP, 'http://10.96.1.17/', ['-H', `x-user: ${user}`])), first);
      }
      assert.deepEqual([...pods].sort(), ['echo-v1', 'echo-v2']);
    });

    test("a DestinationRule outlierDetection: the endpoint answering 503 twice in a row (python's http.server) is ejected, and the rest of the requests go to the healthy one", async () => {
      const answers: number[] = [];
      for (let i = 0; i < 10; i++) answers.push((await curl(L7_WEB_IP, 'http://10.96.1.13/od/fail/od/100')).status);
      assert.equal(flakySaw('/od/fail/od/100').length, 2, 'two 503s, then no more requests');
      assert.deepEqual(answers.filter((s) => s === 503).length, 2);
      assert.deepEqual(answers.slice(4), [200, 200, 200, 200, 200, 200]);
    });

    test("a client giving up on its request is not the endpoint's failure: with outlierDetection ejecting on one 5xx, python's server still takes the next request", async () => {
      const given = await runToExit(
        'curl',
        [
          '-sS',
          '-m',
          '1',
          '--socks5',
          `${L7_WEB_IP}:15080`,
          '--interface',
          L7_WEB_IP,
          'http://10.96.1.13/gone/hang/g1/1',
        ],
        15_000,
      );
      assert.equal(given.status, 28, 'curl gave up');
      await waitFor('python holding the request', () => flakySaw('/gone/hang/g1/1').length === 1);
      const next = await curl(L7_WEB_IP, 'http://10.96.1.13/gone/after');
      assert.equal(next.status, 200, next.body);
      assert.equal(flakySaw('/gone/after').length, 1);
    });

    test("a DestinationRule connectionPool (maxConnections 1, http1MaxPendingRequests 1): with one request in flight to python's http.server and one waiting, another is answered 503 UO with x-envoy-overloaded; once the clients give up, requests pass again", async () => {
      /** curl giving up after 3 s on a path python holds for 10 s: its exit code and what it printed. */
      const hung = (key: string): Promise<{ status: number | null; stdout: string }> =>
        runToExit(
          'curl',
          [
            '-sS',
            '-m',
            '3',
            '-D',
            '-',
            '--socks5',
            `${L7_WEB_IP}:15080`,
            '--interface',
            L7_WEB_IP,
            `http://10.96.1.13/cb/hang/${key}/1`,
          ],
          15_000,
        );
      const first = hung('cb1');
      await waitFor('python holding the first request', () => flakySaw('/cb/hang/cb1/1').length === 1);
      const results = await Promise.all(['cb2', 'cb3'].map(async (key) => ({ key, ...(await hung(key)) })));
      const overflowed = results.filter((r) => r.status === 0);
      assert.equal(overflowed.length, 1, 'one waits (and is given up), the other overflows');
      const [over] = overflowed;
      assert.match(over!.stdout, /^HTTP\/1\.1 503 /);
      assert.match(over!.stdout, /\r\nx-envoy-overloaded: true\r\n/i);
      assert.match(over!.stdout, /reset reason: overflow$/);
      assert.equal(flakySaw(`/cb/hang/${over!.key}/1`).length, 0, 'the overflowing request never reached python');
      assert.deepEqual(
        results.filter((r) => r.status !== 0).map((r) => r.status),
        [28],
        'curl gave up on the one waiting',
      );
      assert.equal((await first).status, 28);
      assert.equal((await curl(L7_WEB_IP, 'http://10.96.1.13/cb/after')).status, 200);
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

    test("a CUSTOM policy's gRPC provider amesh did not write (python3-grpcio, Envoy's Check decoded by field number) is sent the client's principal, method, path and headers; its denial reaches the client as its 418, body and header, flagged UAEX; its OK lets the request through with its headers upstream and downstream", async () => {
      const denied = await curlWithHeaders(L7_WEB_IP, 'http://10.96.1.10/py-grpc/items?color=red');
      assert.equal(denied.status, 418, denied.body);
      assert.equal(denied.body, 'python says no');
      assert.equal(denied.headers['x-py-verdict'], 'denied');
      const deniedCheck = await checkSeen(pyGrpc, '/py-grpc/items?color=red');
      assert.equal(deniedCheck.verdict, 'denied');
      assert.equal(deniedCheck.principal, `spiffe://${WEB_PRINCIPAL}`);
      assert.equal(deniedCheck.method, 'GET');
      assert.equal(deniedCheck.host, '10.96.1.10');
      assert.equal(deniedCheck.headers['x-py-authz'], undefined);
      await waypointSeries(wp, 'istio_requests_total', [
        'response_code="418"',
        'response_flags="UAEX"',
        'source_workload="web-0"',
        `destination_service="${svcHost('echo')}"`,
      ]);

      const allowed = await curlWithHeaders(L7_WEB_IP, 'http://10.96.1.10/py-grpc/items/2', [
        '-H',
        'x-py-authz: yes',
        '--data-binary',
        'a body that waits for the check',
      ]);
      assert.equal(servedBy(allowed), 'echo-v1');
      const upstream = echoed(allowed);
      assert.equal(upstream.method, 'POST');
      assert.equal(upstream.headers['x-py-checked'], '/py-grpc/items/2', 'ok_response.headers go upstream');
      assert.equal(upstream.headers['x-py-verdict'], undefined, 'response_headers_to_add do not go upstream');
      assert.equal(allowed.headers['x-py-verdict'], 'allowed', 'response_headers_to_add reach the client');
      const allowedCheck = await checkSeen(pyGrpc, '/py-grpc/items/2');
      assert.equal(allowedCheck.verdict, 'allowed');
      assert.equal(allowedCheck.principal, `spiffe://${WEB_PRINCIPAL}`);
      assert.equal(allowedCheck.method, 'POST');
      assert.equal(allowedCheck.headers['x-py-authz'], 'yes');
      // Another identity is put to the provider with its own principal.
      assert.equal(
        servedBy(await curl(L7_OTHER_IP, 'http://10.96.1.10/py-grpc/from-other', ['-H', 'x-py-authz: yes'])),
        'echo-v1',
      );
      assert.equal(
        (await checkSeen(pyGrpc, '/py-grpc/from-other')).principal,
        'spiffe://cluster.local/ns/frontend/sa/other',
      );
    });

    test("a CUSTOM policy's HTTP provider amesh did not write (python's http.server) is sent the method and path with Envoy's default headers and the one asked for; its 403 reaches the client with its body and the header named for denials; its 200 lets the request through with the header named for upstream, and other headers of its answer go nowhere", async () => {
      const denied = await curlWithHeaders(L7_WEB_IP, 'http://10.96.1.10/py-http/items', ['-X', 'DELETE']);
      assert.equal(denied.status, 403, denied.body);
      assert.equal(denied.body, 'python http says no');
      assert.equal(denied.headers['x-py-verdict'], 'denied');
      assert.doesNotMatch(denied.headers['server'] ?? '', /BaseHTTP/, "the provider's other headers stay with it");
      const deniedCheck = await checkSeen(pyHttp, '/py-http/items');
      assert.equal(deniedCheck.verdict, 'denied');
      assert.equal(deniedCheck.method, 'DELETE');
      assert.equal(deniedCheck.headers['host'], '10.96.1.10');
      assert.equal(deniedCheck.headers['user-agent'], undefined, 'a header not asked for is not sent');
      await waypointSeries(wp, 'istio_requests_total', [
        'response_code="403"',
        'response_flags="UAEX"',
        `destination_service="${svcHost('echo')}"`,
      ]);

      const allowed = await curlWithHeaders(L7_WEB_IP, 'http://10.96.1.10/py-http/items?page=2', [
        '-H',
        'x-py-authz: yes',
        '-H',
        'x-not-asked: 1',
      ]);
      assert.equal(servedBy(allowed), 'echo-v1');
      const upstream = echoed(allowed);
      assert.equal(upstream.headers['x-py-checked'], '/py-http/items?page=2');
      assert.equal(upstream.headers['x-not-asked'], '1', "the client's own headers still go upstream");
      // x-py-verdict: allowed is in the provider's 200, but neither headersToUpstreamOnAllow nor ...OnAllow names it.
      assert.equal(upstream.headers['x-py-verdict'], undefined);
      assert.equal(allowed.headers['x-py-verdict'], undefined);
      const allowedCheck = await checkSeen(pyHttp, '/py-http/items?page=2');
      assert.equal(allowedCheck.verdict, 'allowed');
      assert.equal(allowedCheck.method, 'GET');
      assert.equal(allowedCheck.headers['x-py-authz'], 'yes');
      assert.equal(allowedCheck.headers['x-not-asked'], undefined);
    });

    test("a provider that cannot be asked (nothing listens on its pod's port) refuses with statusOnError, 403 unless set, logging why; a failOpen one lets the request through", async () => {
      const closed = await curlWithHeaders(L7_WEB_IP, 'http://10.96.1.10/down-closed/items');
      assert.deepEqual({ status: closed.status, body: closed.body }, { status: 403, body: '' });
      const set = await curlWithHeaders(L7_WEB_IP, 'http://10.96.1.10/down-503/items');
      assert.deepEqual({ status: set.status, body: set.body }, { status: 503, body: '' });
      await waypointLogs.waitFor(
        'the waypoint logged why it refused',
        (l) =>
          l['message'] === 'waypoint: denied by authorization policy' &&
          l['path'] === '/down-closed/items' &&
          String(l['reason']).startsWith('ext_authz provider py-down could not be asked'),
      );
      assert.equal(servedBy(await curl(L7_WEB_IP, 'http://10.96.1.10/down-open/items')), 'echo-v1');
    });
  },
);
