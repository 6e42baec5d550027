/**
 * GRPCRoute (gateway.networking.k8s.io/v1) end to end: the API server serves and checks it as the standard channel's
 * CRD does and kubectl prints its columns; istiod reads it from the API into the waypoint's routes beside the
 * HTTPRoutes; and the waypoint's route table, built from the xDS resource istiod sends, routes gRPC calls by service
 * and method as Envoy routes what Istio generates from a GRPCRoute.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { anyUnpack } from '@bufbuild/protobuf/wkt';
import { WaypointSchema, type Waypoint } from '../src/api/amesh/waypoint/v1/waypoint_pb.js';
import type { Istiod } from '../src/istiod/istiod.js';
import { IncrementalMeshModel } from '../src/istiod/model/incremental-mesh-model.js';
import { parseManifests } from '../src/istiod/registry/manifest-dir.js';
import { WAYPOINT_TYPE, waypointResource } from '../src/istiod/xds/waypoint-resource.js';
import { routeRequest, routeTablesFromXds, type RouteTable } from '../src/waypoint/route-table.js';
import { openStream } from './helpers/ads-stream.js';
import { startIstiod } from './helpers/in-process.js';
import { kubectlSkip, kubectlWith } from './helpers/kubectl.js';
import { namespaces } from './helpers/manifests.js';

/** A waypoint for Services in shop, and two Services, echo bound to it. */
const MESH = `
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata:
  name: waypoint
  namespace: shop
  labels: {istio.io/waypoint-for: service}
spec:
  gatewayClassName: istio-waypoint
  listeners: [{name: mesh, port: 15008, protocol: HBONE}]
---
apiVersion: v1
kind: Service
metadata: {name: echo, namespace: shop, labels: {istio.io/use-waypoint: waypoint}}
spec: {clusterIP: 10.96.0.10, selector: {app: echo}, ports: [{name: grpc, port: 50051, appProtocol: grpc}]}
---
apiVersion: v1
kind: Service
metadata: {name: echo-v2, namespace: shop}
spec: {clusterIP: 10.96.0.11, selector: {app: echo, version: v2}, ports: [{name: grpc, port: 50051}]}
`;

/** A plain GRPCRoute, as the Gateway API's docs write one for a mesh (GAMMA): parentRef the Service. */
const GRPC_ROUTE = `
apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: {name: echo, namespace: shop}
spec:
  parentRefs:
  - group: ""
    kind: Service
    name: echo
    port: 50051
  hostnames: [echo.shop.svc.cluster.local]
  rules:
  - matches:
    - method: {service: echo.Echo, method: Say}
      headers: [{name: x-version, value: v2}]
    backendRefs: [{name: echo-v2, port: 50051}]
  - matches:
    - method: {service: grpc.health.v1.Health}
    filters:
    - type: ResponseHeaderModifier
      responseHeaderModifier: {set: [{name: x-checked-by, value: waypoint}]}
    backendRefs: [{name: echo, port: 50051}]
  - matches:
    - method: {type: RegularExpression, method: "Shout|Whisper"}
    backendRefs: [{name: echo-v2, port: 50051, weight: 1}, {name: echo, port: 50051, weight: 0}]
  - backendRefs: [{name: echo, port: 50051}]
`;

/** A GRPCRoute its CRD's schema refuses: no such method match type, a port out of range. */
const BAD_GRPC_ROUTE = `
apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: {name: bad, namespace: shop}
spec:
  parentRefs: [{group: "", kind: Service, name: echo}]
  rules:
  - matches: [{method: {type: Prefix, service: echo}}]
    backendRefs: [{name: echo, port: 70000}]
`;

/** The route table of echo:50051 the waypoint builds from its xDS resource. */
function echoTable(w: Waypoint): RouteTable {
  const { tables, rejected } = routeTablesFromXds(w.services);
  assert.deepEqual(rejected, []);
  const t = tables.find((x) => x.hostname === 'echo.shop.svc.cluster.local' && x.port === 50051);
  assert.ok(t !== undefined, JSON.stringify(tables.map((x) => [x.hostname, x.port])));
  return t;
}

/** Where a gRPC call (an HTTP/2 POST to /<service>/<method>) goes: the route's name and its backends' hosts. */
function routed(t: RouteTable, url: string, headers: Record<string, string> = {}): string {
  const r = routeRequest(t, { method: 'POST', url, headers: { 'content-type': 'application/grpc', ...headers } });
  if (r === undefined) return 'none';
  const a = r.action;
  const to = a.t === 'forward' ? a.backends.map((b) => `${b.hostname.split('.')[0]}:${b.weight}`).join(',') : a.t;
  return `${r.name} ${to}`;
}

/** The calls every test below routes, and where the GRPCRoute above sends them. */
function assertRoutes(t: RouteTable): void {
  assert.equal(routed(t, '/echo.Echo/Say', { 'x-version': 'v2' }), 'shop/echo.0 echo-v2:1');
  assert.equal(routed(t, '/echo.Echo/Say'), 'shop/echo.3 echo:1', 'no header: the rule without matches');
  assert.equal(routed(t, '/grpc.health.v1.Health/Check'), 'shop/echo.1 echo:1');
  assert.equal(routed(t, '/grpc.health.v1.Health/Watch'), 'shop/echo.1 echo:1');
  assert.equal(routed(t, '/grpc.health.v1.HealthX/Check'), 'shop/echo.3 echo:1', 'a service prefix is the whole name');
  assert.equal(routed(t, '/any.Service/Shout'), 'shop/echo.2 echo-v2:1,echo:0');
  assert.equal(routed(t, '/any.Service/Whisper'), 'shop/echo.2 echo-v2:1,echo:0', 'the alternation is grouped');
  assert.equal(routed(t, '/any.Service/Shouting'), 'shop/echo.3 echo:1', 'a method regex matches the whole name');
  const health = routeRequest(t, { method: 'POST', url: '/grpc.health.v1.Health/Check', headers: {} });
  assert.deepEqual(health?.responseHeaders?.set, [['x-checked-by', 'waypoint']]);
}

test('a GRPCRoute reaches the waypoint route table through the xDS resource, and routes gRPC calls by service and method', () => {
  const { objects, errors } = parseManifests(
    'm.yaml',
    // The Gateway as its controller publishes it once the waypoint's pod is ready.
    MESH.replace(
      '  listeners: [{name: mesh, port: 15008, protocol: HBONE}]\n',
      '$&status: {addresses: [{type: Hostname, value: waypoint.shop.svc.cluster.local}]}\n',
    ) +
      '---\n' +
      GRPC_ROUTE,
  );
  assert.deepEqual(errors, []);
  const m = new IncrementalMeshModel({
    clusterId: 'Kubernetes',
    trustDomain: 'cluster.local',
    rootNamespace: 'istio-system',
    domainSuffix: 'cluster.local',
    ipAutoallocate: false,
  });
  m.replaceAll(objects);
  const model = m.waypoint('shop/waypoint');
  assert.ok(model !== undefined);
  const res = waypointResource('shop/waypoint', model);
  const w = anyUnpack(res.resource, WaypointSchema);
  assert.ok(w !== undefined);
  assertRoutes(echoTable(w));
});

describe('GRPCRoute through the API server and istiod', { skip: kubectlSkip, timeout: 120_000 }, () => {
  let dir: string;
  let ist: Istiod;
  const { kubectl, ok } = kubectlWith(() => ist.kubeconfigPath ?? '');

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'amesh-grpcroute-'));
    await mkdir(path.join(dir, 'config'));
    await writeFile(path.join(dir, 'config', 'mesh.yaml'), namespaces('shop') + MESH);
    ist = await startIstiod(path.join(dir, 'config'), path.join(dir, 'state'));
  });
  after(async () => {
    await ist?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  test('kubectl applies a plain GRPCRoute, gets it with its HOSTNAMES and AGE columns, and the API server fills its defaults', async () => {
    await writeFile(path.join(dir, 'route.yaml'), GRPC_ROUTE);
    assert.match(
      await ok('apply', '-f', path.join(dir, 'route.yaml')),
      /grpcroute.gateway.networking.k8s.io\/echo created/,
    );
    const table = (await ok('get', 'grpcroutes', '-n', 'shop')).trim().split('\n');
    assert.deepEqual(table[0]!.split(/\s+/), ['NAME', 'HOSTNAMES', 'AGE']);
    assert.deepEqual(table[1]!.split(/\s+/).slice(0, 2), ['echo', '["echo.shop.svc.cluster.local"]']);
    const got = JSON.parse(await ok('get', 'grpcroute', '-n', 'shop', 'echo', '-o', 'json')) as {
      apiVersion: string;
      spec: { rules: { matches?: { method: { type: string } }[]; backendRefs: Record<string, unknown>[] }[] };
    };
    assert.equal(got.apiVersion, 'gateway.networking.k8s.io/v1');
    assert.equal(got.spec.rules[0]!.matches![0]!.method.type, 'Exact');
    assert.deepEqual(got.spec.rules[0]!.backendRefs[0], {
      group: '',
      kind: 'Service',
      name: 'echo-v2',
      port: 50051,
      weight: 1,
    });
    assert.equal(got.spec.rules[3]!.matches, undefined, 'a GRPCRoute rule gets no default match');
    // The gateway-api category and the resource's own names find it.
    assert.match(await ok('get', 'gateway-api', '-n', 'shop'), /grpcroute.gateway.networking.k8s.io\/echo/);
    assert.match(
      await ok('api-resources', '--api-group', 'gateway.networking.k8s.io'),
      /^grpcroutes\s.*\sGRPCRoute\s*$/m,
    );
  });

  test('a GRPCRoute its schema refuses is refused with the fields named', async () => {
    await writeFile(path.join(dir, 'bad.yaml'), BAD_GRPC_ROUTE);
    const r = await kubectl('apply', '-f', path.join(dir, 'bad.yaml'));
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /spec\.rules\[0\]\.matches\[0\]\.method\.type: Unsupported value: "Prefix"/);
    assert.match(r.stderr, /spec\.rules\[0\]\.backendRefs\[0\]\.port: Invalid value: 70000/);
  });

  test("istiod reads the GRPCRoute from the API into the bound waypoint's resource, and the waypoint routes by it", async () => {
    // The waypoint's pod as a ready endpoint: its Gateway is Programmed with an address, and echo is bound to it.
    await writeFile(
      path.join(dir, 'slice.yaml'),
      `apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: waypoint-x1, namespace: shop, labels: {kubernetes.io/service-name: waypoint}}
addressType: IPv4
endpoints: [{addresses: [10.1.0.9], conditions: {ready: true}}]
ports: [{name: mesh, port: 15008, protocol: TCP}]
`,
    );
    await ok('apply', '-f', path.join(dir, 'slice.yaml'));
    await ok(
      'wait',
      '--for=condition=Programmed',
      '-n',
      'shop',
      'gateways.gateway.networking.k8s.io/waypoint',
      '--timeout=20s',
    );

    const token = await ist.issuer.issue({ namespace: 'shop', serviceAccount: 'waypoint', audience: 'istio-ca' });
    const s = openStream(ist, await readFile(ist.rootCertPath, 'utf8'), token);
    let latest: Waypoint | undefined;
    const deadline = Date.now() + 20_000;
    try {
      s.stream.write({
        typeUrl: WAYPOINT_TYPE,
        node: { id: 'waypoint~10.1.0.9~waypoint-0.shop~shop.svc.cluster.local' },
        resourceNamesSubscribe: ['shop/waypoint'],
      });
      while (latest?.services.some((t) => t.port === 50051) !== true) {
        let timer: ReturnType<typeof setTimeout> | undefined;
        const r = await Promise.race([
          s.next(),
          new Promise<undefined>(
            (resolve) => (timer = setTimeout(() => resolve(undefined), Math.max(0, deadline - Date.now()))),
          ),
        ]);
        clearTimeout(timer);
        assert.ok(r !== undefined, `no Waypoint with echo's routes in 20 s; last: ${JSON.stringify(latest?.services)}`);
        s.stream.write({ typeUrl: r.typeUrl, responseNonce: r.nonce });
        const res = r.resources.find((x) => x.name === 'shop/waypoint')?.resource;
        if (res !== undefined) latest = anyUnpack(res, WaypointSchema);
      }
    } finally {
      s.stream.end();
    }
    assert.deepEqual(
      latest.services.map((t) => [t.hostname, t.port, t.routes.map((r) => r.name)]),
      [['echo.shop.svc.cluster.local', 50051, ['shop/echo.0', 'shop/echo.1', 'shop/echo.2', 'shop/echo.3']]],
    );
    assertRoutes(echoTable(latest));
  });
});
