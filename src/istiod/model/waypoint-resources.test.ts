import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseManifests } from '../registry/manifest-dir.js';
import { gatewayDuration } from './http-routes.js';
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

function service(name: string, ip: string, bound = true, ns = 'shop'): string {
  const labels = bound ? '{istio.io/use-waypoint: waypoint}' : '{}';
  return `
---
apiVersion: v1
kind: Service
metadata: {name: ${name}, namespace: ${ns}, labels: ${labels}}
spec: {clusterIP: ${ip}, selector: {app: ${name}}, ports: [{port: 80}, {port: 9080}]}`;
}

function route(name: string, spec: string, created = '2026-01-01T00:00:00Z'): string {
  return `
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: ${name}, namespace: shop, creationTimestamp: "${created}"}
spec: ${spec}`;
}

function policy(name: string, spec: string, ns = 'shop'): string {
  return `
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: ${name}, namespace: ${ns}}
spec: ${spec}`;
}

const BASE = WAYPOINT + service('reviews', '10.96.0.10') + service('reviews-v2', '10.96.0.11', false);

function model(yaml: string): { m: IncrementalMeshModel; warnings: readonly string[] } {
  const m = new IncrementalMeshModel(CFG);
  const c = m.replaceAll(objects(yaml));
  return { m, warnings: c.warnings };
}

test("an HTTPRoute on a Service bound to a waypoint becomes that waypoint's routes, one per match, in Gateway API precedence", () => {
  const { m } = model(
    BASE +
      route(
        'reviews',
        `{parentRefs: [{group: "", kind: Service, name: reviews}], rules: [
          {backendRefs: [{name: reviews, port: 9080}]},
          {matches: [{headers: [{name: X-Version, value: v2}]}, {path: {type: PathPrefix, value: /v2/}}],
           backendRefs: [{name: reviews-v2, port: 9080, weight: 3}, {name: reviews, port: 9080}]},
          {matches: [{path: {type: Exact, value: /admin}, method: DELETE}], backendRefs: [{name: reviews, port: 9080}]}]}`,
      ),
  );
  const w = m.waypoint('shop/waypoint');
  assert.ok(w !== undefined);
  assert.equal(w.services.length, 1);
  const t = w.services[0]!;
  assert.deepEqual([t.namespace, t.hostname, t.port], ['shop', 'reviews.shop.svc.cluster.local', 0]);
  // Exact first, then the longer prefix, then the header match on "/" (more headers than the plain default).
  assert.deepEqual(
    t.routes.map((r) => r.name),
    ['shop/reviews.2', 'shop/reviews.1', 'shop/reviews.1', 'shop/reviews.0'],
  );
  assert.deepEqual(t.routes[1]!.matches[0]!.path, { prefix: '/v2' });
  assert.deepEqual(t.routes[2]!.matches[0]!.headers, [{ name: 'x-version', exact: 'v2' }]);
  assert.deepEqual(t.routes[2]!.action, {
    forward: [
      { namespace: 'shop', hostname: 'reviews-v2.shop.svc.cluster.local', port: 9080, weight: 3 },
      { namespace: 'shop', hostname: 'reviews.shop.svc.cluster.local', port: 9080, weight: 1 },
    ],
  });
  assert.equal(t.routes[0]!.matches[0]!.method, 'DELETE');
});

test('routes of an older HTTPRoute come first among equals, and a parentRef port gets the routes for every port too', () => {
  const { m } = model(
    BASE +
      route(
        'young',
        `{parentRefs: [{kind: Service, name: reviews, port: 9080}], rules: [{backendRefs: [{name: reviews-v2, port: 9080}]}]}`,
        '2026-02-01T00:00:00Z',
      ) +
      route(
        'old',
        `{parentRefs: [{kind: Service, name: reviews}], rules: [{backendRefs: [{name: reviews, port: 9080}]}]}`,
        '2026-01-01T00:00:00Z',
      ),
  );
  const tables = m.waypoint('shop/waypoint')!.services;
  assert.deepEqual(
    tables.map((t) => [t.port, t.routes.map((r) => r.name)]),
    [
      [0, ['shop/old.0']],
      [9080, ['shop/old.0', 'shop/young.0']],
    ],
  );
});

test('a backendRef that cannot be resolved keeps its share as a 500, and a rule with an unsupported filter answers 500', () => {
  const { m, warnings } = model(
    BASE +
      route(
        'r',
        `{parentRefs: [{kind: Service, name: reviews}], rules: [
          {matches: [{path: {value: /a}}], backendRefs: [{name: nowhere, port: 80}, {name: reviews, port: 9080}]},
          {matches: [{path: {value: /b}}], backendRefs: [{name: reviews, port: 1234}]},
          {matches: [{path: {value: /c}}], filters: [{type: ExtensionRef}], backendRefs: [{name: reviews, port: 80}]},
          {matches: [{path: {value: /d}}], backendRefs: [{name: reviews, namespace: other, port: 80}]}]}`,
      ),
  );
  const routes = m.waypoint('shop/waypoint')!.services[0]!.routes;
  const byPath = new Map(routes.map((r) => [JSON.stringify(r.matches[0]!.path), r.action]));
  assert.deepEqual(byPath.get('{"prefix":"/a"}'), {
    forward: [
      { namespace: 'shop', hostname: '', port: 0, weight: 1 },
      { namespace: 'shop', hostname: 'reviews.shop.svc.cluster.local', port: 9080, weight: 1 },
    ],
  });
  assert.deepEqual(byPath.get('{"prefix":"/b"}'), { directStatus: 500 });
  assert.deepEqual(byPath.get('{"prefix":"/c"}'), { directStatus: 500 });
  assert.deepEqual(byPath.get('{"prefix":"/d"}'), { directStatus: 500 }, 'no ReferenceGrant is read: refused');
  assert.ok(
    warnings.some((w) => /ExtensionRef is not supported/.test(w)),
    warnings.join('\n'),
  );
  assert.ok(warnings.some((w) => /nowhere: no such Service/.test(w)));
});

test('routes of a Service that is not bound to a waypoint are in no resource; a route change names the waypoint it changes', () => {
  const unbound = route(
    'v2',
    `{parentRefs: [{kind: Service, name: reviews-v2}], rules: [{backendRefs: [{name: reviews-v2, port: 80}]}]}`,
  );
  const { m } = model(BASE + unbound);
  assert.deepEqual(m.waypoint('shop/waypoint')!.services, []);
  const bound = route(
    'r',
    `{parentRefs: [{kind: Service, name: reviews}], rules: [{backendRefs: [{name: reviews, port: 80}]}]}`,
  );
  const [added] = objects(bound);
  const c = m.update(new Map([['HTTPRoute/shop/r', added!]]));
  assert.deepEqual([...c.waypoints], ['shop/waypoint']);
  assert.equal(m.waypoint('shop/waypoint')!.services.length, 1);
});

test('policies reach a waypoint through targetRefs to its Gateway, its class, or a Service bound to it, and never ztunnel', () => {
  const { m } = model(
    BASE +
      policy(
        'gw',
        `{targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: waypoint}], action: DENY,
          rules: [{to: [{operation: {methods: [DELETE], paths: ["/admin*"]}}]}]}`,
      ) +
      policy(
        'svc',
        `{targetRefs: [{kind: Service, group: "", name: reviews}], rules: [{from: [{source: {serviceAccounts: [web]}}]}]}`,
      ) +
      policy('unbound', `{targetRefs: [{kind: Service, group: "", name: reviews-v2}], rules: [{}]}`) +
      policy(
        'mesh',
        `{targetRefs: [{group: gateway.networking.k8s.io, kind: GatewayClass, name: istio-waypoint}], action: AUDIT, rules: [{}]}`,
        'istio-system',
      ),
  );
  const p = m.waypoint('shop/waypoint')!.policies;
  assert.deepEqual(
    p.map((x) => [x.name, x.action, x.services]),
    [
      ['istio-system/mesh', 'AUDIT', []],
      ['shop/gw', 'DENY', []],
      ['shop/svc', 'ALLOW', ['shop/reviews.shop.svc.cluster.local']],
    ],
  );
  assert.deepEqual(p[1]!.rules[0]!.to[0]!.paths, [{ prefix: '/admin' }]);
  assert.deepEqual(p[2]!.rules[0]!.from[0]!.principals, [{ exact: 'cluster.local/ns/shop/sa/web' }]);
  assert.equal(m.authorizations.size, 0, 'targeted policies are not sent to ztunnel');
});

test('a policy the waypoint cannot evaluate fails closed: ALLOW rules are dropped, DENY rules match everything, unknown providers deny', () => {
  const target = `targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: waypoint}]`;
  const { m, warnings } = model(
    BASE +
      policy(
        'allow',
        `{${target}, rules: [{when: [{key: "experimental.envoy.filters.x", values: [a]}]}, {to: [{operation: {paths: ["/ok"]}}]}]}`,
      ) +
      policy('deny', `{${target}, action: DENY, rules: [{to: [{operation: {paths: ["/{*}/x"]}}]}]}`) +
      policy(
        'custom',
        `{${target}, action: CUSTOM, provider: {name: ext-authz}, rules: [{to: [{operation: {paths: ["/x"]}}]}]}`,
      ),
  );
  const p = new Map(m.waypoint('shop/waypoint')!.policies.map((x) => [x.name, x]));
  assert.equal(p.get('shop/allow')!.rules.length, 1, 'the rule with an unknown key is gone; the other stays');
  assert.deepEqual(p.get('shop/deny')!.rules, [{ from: [], to: [], when: [] }]);
  assert.equal(p.get('shop/custom')!.action, 'DENY');
  assert.ok(
    warnings.some((w) => /ext-authz.*not defined in meshConfig/.test(w)),
    warnings.join('\n'),
  );
});

test("the Gateway API's durations: units summed, bad forms refused", () => {
  assert.equal(gatewayDuration('1m30s'), 90_000);
  assert.equal(gatewayDuration('500ms'), 500);
  assert.equal(gatewayDuration('0s'), 0);
  assert.equal(gatewayDuration('1.5s'), undefined);
  assert.equal(gatewayDuration('10'), undefined);
});

test('a RequestAuthentication reaches the waypoint it targets; keys that cannot be used are sent as an empty key set', () => {
  const ra = (name: string, spec: string): string => `
---
apiVersion: security.istio.io/v1
kind: RequestAuthentication
metadata: {name: ${name}, namespace: shop}
spec: ${spec}`;
  const { m, warnings } = model(
    BASE +
      ra(
        'jwt',
        `{targetRefs: [{kind: Service, group: "", name: reviews}], jwtRules: [{issuer: "https://a", jwksUri: "http://jwks.shop/keys", fromHeaders: [{name: X-Jwt}], outputClaimToHeaders: [{header: X-Sub, claim: sub}]}]}`,
      ) +
      ra(
        'broken',
        `{targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: waypoint}], jwtRules: [{issuer: "https://b", jwks: "{not json"}]}`,
      ),
  );
  const ras = m.waypoint('shop/waypoint')!.requestAuthentications;
  assert.deepEqual(
    ras.map((r) => [r.name, r.services, r.rules.map((x) => [x.issuer, x.jwks, x.jwksUri])]),
    [
      ['shop/broken', [], [['https://b', '{"keys":[]}', '']]],
      ['shop/jwt', ['shop/reviews.shop.svc.cluster.local'], [['https://a', '', 'http://jwks.shop/keys']]],
    ],
  );
  assert.deepEqual(ras[1]!.rules[0]!.fromHeaders, [{ name: 'x-jwt', prefix: '' }]);
  assert.ok(warnings.some((w) => /not a JSON Web Key Set; its tokens are refused/.test(w)));
});

test("meshConfig's ext_authz providers reach the waypoints whose CUSTOM policies name them; an unusable one leaves its policies denying", () => {
  const mesh = `
---
apiVersion: v1
kind: ConfigMap
metadata: {name: istio, namespace: istio-system}
data:
  mesh: |
    accessLogFile: /dev/stdout
    extensionProviders:
    - name: sample-http
      envoyExtAuthzHttp:
        service: ext-authz.shop.svc.cluster.local
        port: 8000
        timeout: 0.5s
        includeRequestHeadersInCheck: [X-Ext-Authz]
        headersToUpstreamOnAllow: [x-ext-authz-check-result]
    - name: sample-grpc
      envoyExtAuthzGrpc: {service: shop/ext-authz.shop.svc.cluster.local, port: 9000, failOpen: true}
    - name: broken
      envoyExtAuthzHttp: {port: 8000}`;
  const custom = (name: string, provider: string): string =>
    policy(
      name,
      `{targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: waypoint}], action: CUSTOM, provider: {name: ${provider}}, rules: [{to: [{operation: {paths: ["/${name}*"]}}]}]}`,
    );
  const { m, warnings } = model(BASE + mesh + custom('a', 'sample-http') + custom('b', 'broken'));
  const w = m.waypoint('shop/waypoint')!;
  assert.equal(w.accessLog, true, 'meshConfig.accessLogFile turns on the access log');
  assert.equal(model(BASE).m.waypoint('shop/waypoint')!.accessLog, false);
  assert.deepEqual(
    w.policies.map((p) => [p.name, p.action, p.provider]),
    [
      ['shop/a', 'CUSTOM', 'sample-http'],
      ['shop/b', 'DENY', ''],
    ],
  );
  assert.deepEqual(
    w.extAuthzProviders.map((p) => [p.name, p.hostname, p.port, p.timeoutMs]),
    [['sample-http', 'ext-authz.shop.svc.cluster.local', 8000, 500]],
    'only the providers its policies name',
  );
  const api = w.extAuthzProviders[0]!.api;
  assert.ok('http' in api);
  assert.deepEqual(api.http.includeRequestHeadersInCheck, [{ exact: 'x-ext-authz' }]);
  assert.ok(
    warnings.some((w) => /"broken" has no service/.test(w)),
    warnings.join('\n'),
  );
});

test("a mesh VirtualService on a Service bound to a waypoint becomes the waypoint's routes in its own order; a Service's HTTPRoutes win over it", () => {
  const vs = (name: string, host: string): string => `
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: ${name}, namespace: shop}
spec:
  hosts: [${host}]
  http:
  - match: [{uri: {prefix: /api}}]
    fault: {abort: {httpStatus: 503, percentage: {value: 50}}}
    route: [{destination: {host: reviews-v2, port: {number: 9080}}}]
  - match: [{port: 9080}]
    route: [{destination: {host: reviews, port: {number: 9080}}}]`;
  const { m, warnings } = model(
    BASE +
      service('ratings', '10.96.0.12') +
      vs('reviews', 'reviews') +
      vs('ratings', 'ratings.shop.svc.cluster.local') +
      route(
        'ratings',
        `{parentRefs: [{group: "", kind: Service, name: ratings}], rules: [{backendRefs: [{name: ratings, port: 80}]}]}`,
      ),
  );
  const tables = m.waypoint('shop/waypoint')!.services;
  const reviews = tables.filter((t) => t.hostname === 'reviews.shop.svc.cluster.local');
  assert.deepEqual(
    reviews.map((t) => [t.port, t.routes.map((r) => r.name)]),
    [
      [0, ['shop/reviews.0']],
      [9080, ['shop/reviews.0', 'shop/reviews.1']],
    ],
    'a route that names a port is only on that port',
  );
  assert.deepEqual(reviews[0]!.routes[0]!.fault, { abort: { httpStatus: 503, percentage: 50 } });
  assert.deepEqual(
    tables.filter((t) => t.hostname === 'ratings.shop.svc.cluster.local').map((t) => t.routes.map((r) => r.name)),
    [['shop/ratings.0']],
  );
  assert.ok(warnings.some((w) => w.includes('ratings.shop.svc.cluster.local has HTTPRoutes')));
});

function pod(name: string, labels: string, ns = 'shop'): string {
  return `
---
apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}, labels: ${labels}}
spec: {nodeName: n1, containers: [{name: c, image: x}]}
status: {phase: Running, podIP: 10.0.0.${name.length}, conditions: [{type: Ready, status: "True"}]}`;
}

/** A VirtualService sending jason to the subset v2 of reviews, everyone else to v1. */
const REVIEWS_VS = `
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: reviews, namespace: shop}
spec:
  hosts: [reviews]
  http:
  - match: [{headers: {end-user: {exact: jason}}}]
    route: [{destination: {host: reviews, port: {number: 80}, subset: v2}}]
  - route: [{destination: {host: reviews, port: {number: 80}, subset: v1}}]`;

const SUBSET_ROUTES =
  `
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: reviews, namespace: shop}
spec: {host: reviews, subsets: [{name: v1, labels: {version: v1}}, {name: v2, labels: {version: v2}}]}` + REVIEWS_VS;

test("a VirtualService subset goes to the workloads its DestinationRule's labels select, kept up to date as pods come, go and change labels", () => {
  const { m } = model(
    BASE +
      SUBSET_ROUTES +
      pod('r1', '{app: reviews, version: v1}') +
      pod('r2a', '{app: reviews, version: v2}') +
      pod('other', '{app: x}'),
  );
  const endpoints = (): unknown =>
    m
      .waypoint('shop/waypoint')!
      .services[0]!.routes.map((r) =>
        'forward' in r.action ? r.action.forward.map((b) => [b.subset?.name, b.subset?.endpoints]) : r.action,
      );
  assert.deepEqual(endpoints(), [[['v2', ['Kubernetes//Pod/shop/r2a']]], [['v1', ['Kubernetes//Pod/shop/r1']]]]);
  const [r2b] = objects(pod('r2bb', '{app: reviews, version: v2}'));
  assert.deepEqual([...m.update(new Map([['Pod/shop/r2bb', r2b!]])).waypoints], ['shop/waypoint'], 'a new v2 pod');
  const [relabelled] = objects(pod('r1', '{app: reviews, version: v2}'));
  assert.deepEqual([...m.update(new Map([['Pod/shop/r1', relabelled!]])).waypoints], ['shop/waypoint']);
  assert.deepEqual(endpoints(), [
    [['v2', ['Kubernetes//Pod/shop/r1', 'Kubernetes//Pod/shop/r2a', 'Kubernetes//Pod/shop/r2bb']]],
    [['v1', []]],
  ]);
  const [unrelated] = objects(pod('other', '{app: y}'));
  assert.deepEqual([...m.update(new Map([['Pod/shop/other', unrelated!]])).waypoints], [], 'no subset selects it');
});

test("a DestinationRule's traffic policy reaches every backend of its host, an HTTPRoute's as a VirtualService's, merged for the subset and port as Istio merges it; what it cannot apply is said", () => {
  const { m, warnings } = model(
    BASE +
      `
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: reviews, namespace: shop}
spec:
  host: reviews
  trafficPolicy:
    loadBalancer: {consistentHash: {httpHeaderName: X-User}}
    connectionPool: {http: {http2MaxRequests: 10}, tcp: {connectTimeout: 1s}}
    portLevelSettings:
    - port: {number: 9080}
      outlierDetection: {consecutive5xxErrors: 3, interval: 5s}
  subsets:
  - {name: v1, labels: {version: v1}}
  - name: v2
    labels: {version: v2}
    trafficPolicy: {loadBalancer: {simple: ROUND_ROBIN}}` +
      REVIEWS_VS +
      route(
        'ratings',
        `{parentRefs: [{group: "", kind: Service, name: ratings}], rules: [{backendRefs: [{name: reviews, port: 9080}]}]}`,
      ) +
      service('ratings', '10.96.0.12'),
  );
  const pool = {
    maxConnections: 0,
    maxPendingRequests: 0,
    maxRequests: 10,
    maxRetries: 0,
    maxRequestsPerConnection: 0,
  };
  const policies = m
    .waypoint('shop/waypoint')!
    .services.flatMap((t) => t.routes)
    .map((r) => ('forward' in r.action ? r.action.forward.map((b) => [b.subset?.name, b.port, b.trafficPolicy]) : []));
  assert.deepEqual(policies, [
    [
      [
        undefined,
        9080,
        {
          outlierDetection: {
            consecutive5xxErrors: 3,
            consecutiveGatewayErrors: 0,
            intervalMs: 5000,
            baseEjectionTimeMs: 30_000,
            maxEjectionPercent: 10,
            minHealthPercent: 0,
          },
        },
      ],
    ],
    [['v2', 80, { loadBalancer: { simple: 'ROUND_ROBIN' }, connectionPool: pool }]],
    [['v1', 80, { loadBalancer: { simple: '', hash: { header: 'x-user' } }, connectionPool: pool }]],
  ]);
  assert.deepEqual(
    m.waypoint('shop/waypoint')!.servicePolicies.map((p) => [p.hostname, p.port, Object.keys(p.trafficPolicy)]),
    [
      ['reviews.shop.svc.cluster.local', 80, ['loadBalancer', 'connectionPool']],
      ['reviews.shop.svc.cluster.local', 9080, ['outlierDetection']],
    ],
    'each port of a bound Service has its own policy, for the requests no route sends elsewhere',
  );
  assert.ok(
    warnings.includes(
      "DestinationRule shop/reviews: trafficPolicy connectionPool.tcp.connectTimeout is not applied by amesh's waypoints and gateways",
    ),
    warnings.join('\n'),
  );
});

test("an HTTPRoute's RequestMirror mirrors a share of the rule's requests; one whose backend cannot be resolved mirrors nothing", () => {
  const { m, warnings } = model(
    BASE +
      route(
        'r',
        `{parentRefs: [{kind: Service, name: reviews}], rules: [
          {matches: [{path: {value: /a}}], backendRefs: [{name: reviews, port: 80}],
           filters: [{type: RequestMirror, requestMirror: {backendRef: {name: reviews-v2, port: 80}, percent: 30}},
                     {type: RequestMirror, requestMirror: {backendRef: {name: reviews-v2, port: 9080}, fraction: {numerator: 1, denominator: 8}}},
                     {type: RequestMirror, requestMirror: {backendRef: {name: nowhere, port: 80}}}]}]}`,
      ),
  );
  const r = m.waypoint('shop/waypoint')!.services[0]!.routes[0]!;
  assert.deepEqual(
    r.mirrors?.map((x) => [x.backend.hostname, x.backend.port, x.percentage]),
    [
      ['reviews-v2.shop.svc.cluster.local', 80, 30],
      ['reviews-v2.shop.svc.cluster.local', 9080, 12.5],
    ],
  );
  assert.ok('forward' in r.action, 'the rule still forwards');
  assert.ok(
    warnings.some((w) => /RequestMirror backendRef shop\/nowhere: no such Service; nothing is mirrored/.test(w)),
    warnings.join('\n'),
  );
});

test("istio.io/ingress-use-waypoint, on a Service or else its namespace, sends an ingress gateway's requests for a Service bound to a waypoint through it", () => {
  const svc = (name: string, labels: string): string => `
---
apiVersion: v1
kind: Service
metadata: {name: ${name}, namespace: shop, labels: {${labels}}}
spec: {clusterIP: 10.96.1.${name.length}, selector: {app: ${name}}, ports: [{port: 80}]}`;
  const { m, warnings } = model(
    WAYPOINT +
      `
---
apiVersion: v1
kind: Namespace
metadata: {name: shop, labels: {istio.io/ingress-use-waypoint: "true"}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: istio}
spec: {controllerName: istio.io/gateway-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: shop}
spec: {gatewayClassName: istio, listeners: [{name: http, port: 80, protocol: HTTP}]}` +
      svc('a', 'istio.io/use-waypoint: waypoint') +
      svc('bb', 'istio.io/use-waypoint: waypoint, istio.io/ingress-use-waypoint: "false"') +
      svc('ccc', 'istio.io/use-waypoint: waypoint, istio.io/ingress-use-waypoint: "yes"') +
      svc('dddd', '') +
      route(
        'in',
        `{parentRefs: [{name: gw}], rules: [{backendRefs: [{name: a, port: 80}, {name: bb, port: 80}, {name: ccc, port: 80}, {name: dddd, port: 80}]}]}`,
      ),
  );
  const route0 = m.waypoint('shop/gw-istio')!.listeners[0]!.virtualHosts[0]!.routes[0]!;
  assert.ok('forward' in route0.action);
  assert.deepEqual(
    route0.action.forward.map((b) => [b.hostname.split('.')[0], b.useWaypoint ?? false]),
    [
      ['a', true],
      ['bb', false],
      ['ccc', false],
      ['dddd', false],
    ],
    "the namespace's label for a; b's own false wins; c's value is not a boolean; d has no waypoint",
  );
  assert.ok(
    warnings.some((w) => /Service shop\/ccc: istio\.io\/ingress-use-waypoint is "yes", not a boolean/.test(w)),
    warnings.join('\n'),
  );
  assert.equal(m.waypoint('shop/waypoint')!.services.length, 0, 'a waypoint itself is not told');
});
