import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isResource, parseManifests, type ResourceOf } from '../registry/manifest-dir.js';
import { convertVirtualService, protoDuration } from './virtual-services.js';

function virtualService(spec: string): ResourceOf<'VirtualService'> {
  const { objects, errors } = parseManifests(
    'vs.yaml',
    `apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: vs, namespace: shop}\nspec:\n${spec}`,
  );
  assert.deepEqual(errors, []);
  const vs = objects[0]!;
  assert.ok(isResource(vs) && vs.kind === 'VirtualService');
  return vs;
}
const SERVICES = new Map([
  ['shop/web', new Set([80])],
  ['shop/api', new Set([80, 8080])],
]);
const convert = (spec: string) => convertVirtualService(virtualService(spec), SERVICES, 'cluster.local');

test("a uri prefix matches character by character, a header prefix is a regex, and a short host is the namespace's Service", () => {
  const vs = convert(`  hosts: [www.shop.test, web]
  gateways: [gw, mesh, ingress/other]
  http:
  - match: [{uri: {prefix: /api}, headers: {X-User: {prefix: adm}}, method: {exact: GET}}]
    route: [{destination: {host: web}}]`);
  assert.deepEqual(vs.hosts, ['www.shop.test', 'web.shop.svc.cluster.local']);
  assert.deepEqual(vs.gateways, ['shop/gw', 'ingress/other'], 'mesh is for sidecars and waypoints');
  assert.deepEqual(vs.routes[0]!.route.matches, [
    { path: { stringPrefix: '/api' }, headers: [{ name: 'x-user', regex: 'adm.*' }], queryParams: [], method: 'GET' },
  ]);
  assert.deepEqual(vs.routes[0]!.route.action, {
    forward: [{ namespace: 'shop', hostname: 'web.shop.svc.cluster.local', port: 80, weight: 100 }],
  });
  assert.deepEqual(vs.warnings, []);
});

test('a destination the gateway cannot follow answers 500 rather than be routed as if it said less (no such Service, a Service with several ports and none named); a match it cannot evaluate is left out', () => {
  const vs = convert(`  hosts: [a.test]
  gateways: [gw]
  http:
  - route: [{destination: {host: nowhere}, weight: 50}, {destination: {host: web}, weight: 50}]
  - match: [{method: {regex: "GET|HEAD"}}]
    route: [{destination: {host: web}}]
  - route: [{destination: {host: api.shop}}]`);
  assert.deepEqual(vs.routes[0]!.route.action, {
    forward: [
      { namespace: 'shop', hostname: '', port: 0, weight: 50 },
      { namespace: 'shop', hostname: 'web.shop.svc.cluster.local', port: 80, weight: 50 },
    ],
  });
  assert.deepEqual(
    vs.routes.map((r) => r.route.name),
    ['shop/vs.0', 'shop/vs.2'],
    'a match it cannot evaluate is left out, and said so',
  );
  assert.deepEqual(vs.routes[1]!.route.action, { directStatus: 500 });
  assert.equal(vs.warnings.length, 3, vs.warnings.join('\n'));
});

test("redirect is 301 unless it says; rewrite replaces a prefix match's prefix, else the path; an implicit / prefix when nothing matches the uri", () => {
  const vs = convert(`  hosts: [a.test]
  gateways: [gw]
  http:
  - match: [{uri: {exact: /old}}]
    redirect: {uri: /new, authority: b.test}
  - match: [{uri: {prefix: /v1/}}]
    rewrite: {uri: /v2/}
    route: [{destination: {host: web}}]
    timeout: 1.5s
  - rewrite: {uri: /x}
    route: [{destination: {host: web}}]
    retries: {attempts: 3}`);
  assert.deepEqual(vs.routes[0]!.route.action, {
    redirect: { scheme: '', hostname: 'b.test', port: 0, path: { full: '/new' }, statusCode: 301 },
  });
  assert.deepEqual(vs.routes[1]!.route.rewrite, { hostname: '', path: { prefix: '/v2/' } });
  assert.equal(vs.routes[1]!.route.timeoutMs, 1500);
  assert.deepEqual(vs.routes[2]!.route.matches[0]!.path, { stringPrefix: '/' });
  assert.deepEqual(vs.routes[2]!.route.rewrite, { hostname: '', path: { prefix: '/x' } });
  assert.deepEqual(
    vs.routes[2]!.route.retries,
    { attempts: 3, retryOn: [], statusCodes: [], perTryTimeoutMs: undefined },
    'retries are sent as they are',
  );
  assert.deepEqual(vs.warnings, []);
});

test('durations as protobuf JSON writes them', () => {
  assert.equal(protoDuration('5s'), 5000);
  assert.equal(protoDuration('0.25s'), 250);
  assert.equal(protoDuration('100ms'), 100);
  assert.equal(protoDuration('soon'), undefined);
});

test("fault injection as Istio's: a delay and an abort, each for a share of the requests (all when no percentage)", () => {
  const vs = convert(`  hosts: [web]
  http:
  - fault: {delay: {fixedDelay: 2s, percentage: {value: 10}}, abort: {httpStatus: 503}}
    route: [{destination: {host: web}}]`);
  assert.equal(vs.mesh, true, 'no gateways: the mesh');
  assert.deepEqual(vs.routes[0]!.route.fault, {
    delay: { ms: 2000, percentage: 10 },
    abort: { httpStatus: 503, percentage: 100 },
  });
  assert.deepEqual(vs.warnings, []);
});

test("a subset takes its labels from the DestinationRules' lookup; one no rule defines is kept, labelless, and said", () => {
  const lookup = (ns: string, host: string, subset: string) =>
    ns === 'shop' && host === 'web.shop.svc.cluster.local' && subset === 'v2' ? { version: 'v2' } : undefined;
  const vs = convertVirtualService(
    virtualService(`  hosts: [web]
  http:
  - route: [{destination: {host: web, subset: v2}, weight: 90}, {destination: {host: web, subset: v3}, weight: 10}]`),
    SERVICES,
    'cluster.local',
    lookup,
  );
  assert.deepEqual(vs.routes[0]!.route.action, {
    forward: [
      {
        namespace: 'shop',
        hostname: 'web.shop.svc.cluster.local',
        port: 80,
        weight: 90,
        subset: { name: 'v2', labels: { version: 'v2' } },
      },
      {
        namespace: 'shop',
        hostname: 'web.shop.svc.cluster.local',
        port: 80,
        weight: 10,
        subset: { name: 'v3', labels: undefined },
      },
    ],
  });
  assert.ok(
    vs.warnings.some((w) =>
      /subset v3 of web\.shop\.svc\.cluster\.local is not defined by a DestinationRule; its requests are answered 503/.test(
        w,
      ),
    ),
    vs.warnings.join('\n'),
  );
});

test('mirror with mirrorPercentage (every request without), mirrors with their own shares; an unresolvable mirror is left out and said', () => {
  const vs = convert(`  hosts: [web]
  http:
  - route: [{destination: {host: web}}]
    mirror: {host: api, port: {number: 8080}}
    mirrorPercentage: {value: 12.5}
    mirrors: [{destination: {host: web}}, {destination: {host: nowhere}, percentage: {value: 5}}]
  - route: [{destination: {host: web}}]
    mirror: {host: web}`);
  assert.deepEqual(vs.routes[0]!.route.mirrors, [
    { backend: { namespace: 'shop', hostname: 'api.shop.svc.cluster.local', port: 8080, weight: 1 }, percentage: 12.5 },
    { backend: { namespace: 'shop', hostname: 'web.shop.svc.cluster.local', port: 80, weight: 1 }, percentage: 100 },
  ]);
  assert.equal(vs.routes[1]!.route.mirrors?.[0]?.percentage, 100);
  assert.ok(
    vs.warnings.some((w) =>
      /mirror nowhere\.shop\.svc\.cluster\.local: no such Service; nothing is mirrored there/.test(w),
    ),
    vs.warnings.join('\n'),
  );
});

test('retries as Istio converts them: statuses among retryOn become retriable-status-codes, perTryTimeout is a duration', () => {
  const vs = convert(`  hosts: [web]
  http:
  - route: [{destination: {host: web}}]
    retries: {attempts: 3, retryOn: "connect-failure,503, 429", perTryTimeout: 2s}
  - route: [{destination: {host: web}}]
    retries: {attempts: 1, retryOn: "5xx,retriable-status-codes,502"}
  - route: [{destination: {host: web}}]
    retries: {attempts: 2, perTryTimeout: soon}`);
  assert.deepEqual(vs.routes[0]!.route.retries, {
    attempts: 3,
    retryOn: ['connect-failure', 'retriable-status-codes'],
    statusCodes: [503, 429],
    perTryTimeoutMs: 2000,
  });
  assert.deepEqual(vs.routes[1]!.route.retries?.retryOn, ['5xx', 'retriable-status-codes']);
  assert.deepEqual(vs.routes[2]!.route.action, { directStatus: 500 }, 'a perTryTimeout that is not a duration');
});
