import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseManifests } from '../registry/manifest-dir.js';
import { IncrementalMeshModel } from './incremental-mesh-model.js';

const CFG = {
  clusterId: 'Kubernetes',
  trustDomain: 'cluster.local',
  rootNamespace: 'istio-system',
  domainSuffix: 'cluster.local',
  ipAutoallocate: false,
};

function objects(yaml: string): ReturnType<typeof parseManifests>['objects'] {
  const { objects, errors } = parseManifests('m.yaml', yaml);
  assert.deepEqual(errors, []);
  return objects;
}

const WAYPOINT = `
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: waypoint, namespace: shop}
spec: {gatewayClassName: istio-waypoint, listeners: [{name: mesh, port: 15008, protocol: HBONE}]}
status: {addresses: [{type: Hostname, value: waypoint.shop.svc.cluster.local}]}`;

function service(name: string, ip: string, bound = true): string {
  return `
---
apiVersion: v1
kind: Service
metadata: {name: ${name}, namespace: shop, labels: ${bound ? '{istio.io/use-waypoint: waypoint}' : '{}'}}
spec: {clusterIP: ${ip}, selector: {app: ${name}}, ports: [{port: 50051}, {port: 8080}]}`;
}

function grpcRoute(name: string, spec: string, created = '2026-01-01T00:00:00Z'): string {
  return `
---
apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: {name: ${name}, namespace: shop, creationTimestamp: "${created}"}
spec: ${spec}`;
}

function httpRoute(name: string, spec: string, created = '2026-01-01T00:00:00Z'): string {
  return `
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: ${name}, namespace: shop, creationTimestamp: "${created}"}
spec: ${spec}`;
}

const BASE = WAYPOINT + service('echo', '10.96.0.10') + service('echo-v2', '10.96.0.11', false);
const PARENT = `parentRefs: [{group: "", kind: Service, name: echo}]`;
const TO_ECHO = `backendRefs: [{name: echo, port: 50051}]`;
const ECHO = { namespace: 'shop', hostname: 'echo.shop.svc.cluster.local', port: 50051, weight: 1 };
const ECHO_V2 = { namespace: 'shop', hostname: 'echo-v2.shop.svc.cluster.local', port: 50051, weight: 1 };

function model(yaml: string): { m: IncrementalMeshModel; warnings: readonly string[] } {
  const m = new IncrementalMeshModel(CFG);
  const c = m.replaceAll(objects(yaml));
  return { m, warnings: c.warnings };
}

test("a GRPCRoute's method matches become the path matches Istio writes, in Gateway API precedence", () => {
  const { m, warnings } = model(
    BASE +
      grpcRoute(
        'echo',
        `{${PARENT}, rules: [
          {matches: [{headers: [{name: X-Canary, value: "yes"}]}], ${TO_ECHO}},
          {matches: [{method: {method: Check}}], ${TO_ECHO}},
          {matches: [{method: {service: grpc.health.v1.Health}}], ${TO_ECHO}},
          {matches: [{method: {service: echo.Echo, method: Say}}], ${TO_ECHO}},
          {matches: [{method: {type: RegularExpression, service: "echo\\\\.(Echo|Shout)"}}], ${TO_ECHO}},
          {matches: [{method: {type: RegularExpression, method: "Get.*"}}], ${TO_ECHO}},
          {matches: [{method: {type: RegularExpression, service: "echo\\\\.Echo", method: "S.y"}}], ${TO_ECHO}},
          {${TO_ECHO}}]}`,
      ),
  );
  assert.deepEqual(warnings, []);
  const w = m.waypoint('shop/waypoint');
  assert.ok(w !== undefined);
  assert.equal(w.services.length, 1);
  const t = w.services[0]!;
  assert.deepEqual([t.namespace, t.hostname, t.port], ['shop', 'echo.shop.svc.cluster.local', 0]);
  // Exact, then the prefix, then regexes longest first (of equal length, in rule order); a match without a method
  // after every path match (Istio's route without a URI), and a rule without matches last.
  assert.deepEqual(
    t.routes.map((r) => [r.name, r.matches[0]?.path]),
    [
      ['shop/echo.3', { exact: '/echo.Echo/Say' }],
      ['shop/echo.2', { prefix: '/grpc.health.v1.Health/' }],
      ['shop/echo.4', { regex: '/echo\\.(Echo|Shout)/.+' }],
      ['shop/echo.6', { regex: '/echo\\.Echo/S.y' }],
      ['shop/echo.1', { regex: '/[^/]+/Check' }],
      ['shop/echo.5', { regex: '/[^/]+/Get.*' }],
      ['shop/echo.0', { regex: '.*' }],
      ['shop/echo.7', undefined],
    ],
  );
  assert.deepEqual(t.routes[6]!.matches[0]!.headers, [{ name: 'x-canary', exact: 'yes' }]);
  assert.deepEqual(t.routes[7]!.matches, [], 'a rule without matches takes every request');
  for (const r of t.routes) {
    assert.equal(r.matches[0]?.method ?? '', '', 'no method match is added');
    assert.deepEqual(r.action, { forward: [ECHO] });
  }
});

test('an exact method name is escaped in its regex, a top-level alternation grouped; a method match naming nothing, or a regex that does not compile, is refused', () => {
  const { m, warnings } = model(
    BASE +
      grpcRoute(
        'odd',
        `{${PARENT}, rules: [
          {matches: [{method: {method: "A.b"}}], ${TO_ECHO}},
          {matches: [{method: {type: Exact}}, {method: {type: RegularExpression, service: "("}}], ${TO_ECHO}},
          {matches: [{headers: [{type: RegularExpression, name: x, value: "["}]}], ${TO_ECHO}},
          {matches: [{method: {type: RegularExpression, service: "a|b", method: "Get|[|]|(L|M)ist"}}], ${TO_ECHO}}]}`,
      ),
  );
  const t = m.waypoint('shop/waypoint')!.services[0]!;
  assert.deepEqual(
    t.routes.map((r) => [r.name, r.matches[0]?.path]),
    [
      ['shop/odd.3', { regex: '/(?:a|b)/(?:Get|[|]|(L|M)ist)' }],
      ['shop/odd.0', { regex: '/[^/]+/A\\.b' }],
    ],
  );
  assert.ok(
    warnings.some(
      (x) =>
        x ===
        'GRPCRoute shop/odd.1: a method match names neither a service nor a method; its requests are answered 500',
    ),
    warnings.join('\n'),
  );
  assert.ok(
    warnings.some((x) => /shop\/odd\.1: method regex "\/\(\/\.\+" does not compile/.test(x)),
    warnings.join('\n'),
  );
  assert.ok(
    warnings.some((x) => /shop\/odd\.2: regex "\[" for x does not compile/.test(x)),
    warnings.join('\n'),
  );
});

test("header modifiers and RequestMirror apply; ExtensionRef and a backendRef's filters answer 500; backends resolve as an HTTPRoute's", () => {
  const { m, warnings } = model(
    BASE +
      grpcRoute(
        'f',
        `{${PARENT}, rules: [
          {matches: [{method: {service: a.A}}],
           filters: [{type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: X-Env, value: prod}], remove: [X-Debug]}},
                     {type: ResponseHeaderModifier, responseHeaderModifier: {add: [{name: X-Served-By, value: waypoint}]}}],
           backendRefs: [{name: echo-v2, port: 50051, weight: 3}, {name: echo, port: 50051}, {name: nowhere, port: 1}]},
          {matches: [{method: {service: b.B}}],
           filters: [{type: RequestMirror, requestMirror: {backendRef: {name: echo-v2, port: 50051}}}], ${TO_ECHO}},
          {matches: [{method: {service: c.C}}], filters: [{type: ExtensionRef, extensionRef: {group: x.io, kind: X, name: x}}], ${TO_ECHO}},
          {matches: [{method: {service: d.D}}], backendRefs: [{name: echo, port: 50051,
            filters: [{type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: a, value: b}]}}]}]},
          {matches: [{method: {service: e.E}}], backendRefs: [{name: echo, port: 9}, {name: echo, namespace: other, port: 50051}]},
          {matches: [{method: {service: f.F}}]}]}`,
      ),
  );
  const routes = m.waypoint('shop/waypoint')!.services[0]!.routes;
  const by = new Map(routes.map((r) => [JSON.stringify(r.matches[0]!.path), r]));
  const a = by.get('{"prefix":"/a.A/"}')!;
  assert.deepEqual(a.requestHeaders, { set: [{ name: 'x-env', value: 'prod' }], add: [], remove: ['x-debug'] });
  assert.deepEqual(a.responseHeaders, { set: [], add: [{ name: 'x-served-by', value: 'waypoint' }], remove: [] });
  assert.deepEqual(a.action, {
    forward: [{ ...ECHO_V2, weight: 3 }, ECHO, { namespace: 'shop', hostname: '', port: 0, weight: 1 }],
  });
  const b = by.get('{"prefix":"/b.B/"}')!;
  assert.deepEqual(b.mirrors, [{ backend: { ...ECHO_V2, weight: 1 }, percentage: 100 }]);
  assert.ok('forward' in b.action);
  for (const s of ['c.C', 'd.D', 'e.E', 'f.F'])
    assert.deepEqual(by.get(`{"prefix":"/${s}/"}`)?.action, { directStatus: 500 }, s);
  for (const re of [
    /GRPCRoute shop\/f\.2: filter ExtensionRef is not supported/,
    /GRPCRoute shop\/f\.3: backendRef filters \(RequestHeaderModifier\) are not supported/,
    /GRPCRoute shop\/f\.0: backendRef shop\/nowhere: no such Service/,
    /GRPCRoute shop\/f\.4: backendRef shop\/echo: the Service has no port 9/,
    /GRPCRoute shop\/f\.4: backendRef other\/echo: another namespace needs a ReferenceGrant/,
  ])
    assert.ok(
      warnings.some((w) => re.test(w)),
      `${String(re)}\n${warnings.join('\n')}`,
    );
});

test("HTTPRoutes and GRPCRoutes of one Service share its tables: precedence across both, an HTTPRoute's first among equals, every port's routes in each port's table", () => {
  const { m } = model(
    BASE +
      grpcRoute(
        'old-grpc',
        `{${PARENT}, rules: [{matches: [{method: {service: echo.Echo, method: Say}}], ${TO_ECHO}},
                             {matches: [{headers: [{name: x-a, value: "1"}]}], ${TO_ECHO}}]}`,
        '2025-01-01T00:00:00Z',
      ) +
      grpcRoute(
        'port',
        `{parentRefs: [{group: "", kind: Service, name: echo, port: 50051}], rules: [{matches: [{method: {service: p.P}}], ${TO_ECHO}}]}`,
      ) +
      httpRoute(
        'http',
        `{${PARENT}, rules: [{matches: [{path: {type: PathPrefix, value: /}, headers: [{name: x-b, value: "2"}]}], backendRefs: [{name: echo-v2, port: 50051}]},
                             {matches: [{path: {type: RegularExpression, value: "/x/[a-z]+/y"}}], backendRefs: [{name: echo-v2, port: 50051}]},
                             {matches: [{path: {type: Exact, value: /echo.Echo/Say}}], backendRefs: [{name: echo-v2, port: 50051}]}]}`,
        '2026-06-01T00:00:00Z',
      ),
  );
  const tables = m.waypoint('shop/waypoint')!.services;
  assert.deepEqual(
    tables.map((t) => [t.port, t.routes.map((r) => r.name)]),
    [
      // Exact paths (the HTTPRoute's first though younger), the gRPC service prefix of port 50051, the HTTPRoute's
      // "/" prefix, its regex, then the gRPC header match that has no path.
      [0, ['shop/http.2', 'shop/old-grpc.0', 'shop/http.0', 'shop/http.1', 'shop/old-grpc.1']],
      [50051, ['shop/http.2', 'shop/old-grpc.0', 'shop/port.0', 'shop/http.0', 'shop/http.1', 'shop/old-grpc.1']],
    ],
  );
  assert.deepEqual(tables[0]!.routes[0]!.action, { forward: [ECHO_V2] });
  assert.deepEqual(tables[0]!.routes[1]!.action, { forward: [ECHO] });
});

test('a GRPCRoute change names the waypoint it changes; a route to an unbound Service, or to a Service in another namespace, reaches none', () => {
  const { m, warnings } = model(
    BASE +
      grpcRoute(
        'v2',
        `{parentRefs: [{kind: Service, name: echo-v2}, {kind: Service, name: echo, namespace: other}], rules: [{${TO_ECHO}}]}`,
      ),
  );
  assert.deepEqual(m.waypoint('shop/waypoint')!.services, []);
  assert.ok(warnings.some((w) => /GRPCRoute shop\/v2: a parentRef to a Service in another namespace/.test(w)));
  const [added] = objects(grpcRoute('r', `{${PARENT}, rules: [{${TO_ECHO}}]}`));
  const c = m.update(new Map([['GRPCRoute/shop/r', added!]]));
  assert.deepEqual([...c.waypoints], ['shop/waypoint']);
  assert.deepEqual(
    m.waypoint('shop/waypoint')!.services.map((t) => t.routes.map((r) => r.name)),
    [['shop/r.0']],
  );
  const gone = m.update(new Map([['GRPCRoute/shop/r', undefined]]));
  assert.deepEqual([...gone.waypoints], ['shop/waypoint']);
  assert.deepEqual(m.waypoint('shop/waypoint')!.services, []);
});
