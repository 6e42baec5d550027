import { test } from 'node:test';
import assert from 'node:assert/strict';
import { create, type MessageInitShape } from '@bufbuild/protobuf';
import { ServiceRoutesSchema } from '../api/amesh/waypoint/v1/waypoint_pb.js';
import {
  editPath,
  pickBackend,
  redirectLocation,
  routeRequest,
  routeTablesFromXds,
  type RouteTable,
} from './route-table.js';

type RouteInit = NonNullable<MessageInitShape<typeof ServiceRoutesSchema>['routes']>[number];

const forward = (hostname: string, weight = 1): RouteInit['action'] => ({
  case: 'forward',
  value: { backends: [{ namespace: 'shop', hostname, port: 9080, weight }] },
});

function table(...routes: RouteInit[]): RouteTable {
  const { tables, rejected } = routeTablesFromXds([
    create(ServiceRoutesSchema, { namespace: 'shop', hostname: 'reviews.shop.svc.cluster.local', routes }),
  ]);
  assert.deepEqual(rejected, []);
  return tables[0]!;
}

const get = (url: string, headers: Record<string, string> = {}, method = 'GET') => ({ method, url, headers });

test('a path prefix matches whole segments, an exact path ignores the query, and a regex must match the whole path', () => {
  const t = table(
    { name: 'exact', matches: [{ path: { kind: { case: 'exact', value: '/admin' } } }], action: forward('a') },
    { name: 'prefix', matches: [{ path: { kind: { case: 'prefix', value: '/v2/' } } }], action: forward('b') },
    { name: 'regex', matches: [{ path: { kind: { case: 'regex', value: '/items/[0-9]+' } } }], action: forward('c') },
  );
  const name = (url: string): string | undefined => routeRequest(t, get(url))?.name;
  assert.equal(name('/admin?x=1'), 'exact');
  assert.equal(name('/admin/x'), undefined);
  assert.equal(name('/v2'), 'prefix');
  assert.equal(name('/v2/reviews'), 'prefix');
  assert.equal(name('/v2reviews'), undefined, 'not a whole segment');
  assert.equal(name('/items/42'), 'regex');
  assert.equal(name('/items/42/x'), undefined, 'the regex is anchored');
});

test('headers, query parameters and the method must all hold; the first route that matches wins', () => {
  const t = table(
    {
      name: 'v2',
      matches: [
        { headers: [{ name: 'X-Version', value: { case: 'exact', value: 'v2' } }] },
        { queryParams: [{ name: 'ver', value: { case: 'regex', value: 'v2|two' } }] },
      ],
      action: forward('reviews-v2'),
    },
    { name: 'delete', matches: [{ method: 'DELETE' }], action: { case: 'directStatus', value: 500 } },
    { name: 'rest', action: forward('reviews') },
  );
  assert.equal(routeRequest(t, get('/', { 'x-version': 'v2' }))?.name, 'v2');
  assert.equal(routeRequest(t, get('/?ver=two'))?.name, 'v2');
  assert.equal(routeRequest(t, get('/?ver=three'))?.name, 'rest');
  assert.equal(routeRequest(t, get('/', {}, 'DELETE'))?.name, 'delete');
  assert.equal(routeRequest(t, get('/', { 'x-version': 'v1' }))?.name, 'rest');
});

test('a route with a regex JavaScript cannot compile answers 500 instead of being skipped', () => {
  const { tables, rejected } = routeTablesFromXds([
    create(ServiceRoutesSchema, {
      namespace: 'shop',
      hostname: 'r',
      routes: [{ name: 'bad', matches: [{ path: { kind: { case: 'regex', value: '(' } } }], action: forward('a') }],
    }),
  ]);
  assert.equal(rejected.length, 1);
  assert.deepEqual(routeRequest(tables[0]!, get('/anything'))?.action, { t: 'direct', status: 500 });
});

test('backends are picked by weight, and a prefix rewrite replaces only the matched segments', () => {
  const t = table({
    name: 'split',
    matches: [{ path: { kind: { case: 'prefix', value: '/api' } } }],
    action: {
      case: 'forward',
      value: {
        backends: [
          { namespace: 'shop', hostname: 'v1', port: 80, weight: 1 },
          { namespace: 'shop', hostname: 'v2', port: 80, weight: 3 },
        ],
      },
    },
  });
  const r = routeRequest(t, get('/api/items?x=1'))!;
  assert.equal(r.action.t, 'forward');
  if (r.action.t !== 'forward') return;
  assert.equal(pickBackend(r.action, () => 0.2)?.hostname, 'v1');
  assert.equal(pickBackend(r.action, () => 0.3)?.hostname, 'v2');
  assert.equal(editPath('/api/items?x=1', { prefix: '/v2' }, r), '/v2/items?x=1');
  assert.equal(editPath('/api/items?x=1', { full: '/all' }, r), '/all?x=1');
});

test('a redirect keeps what the route does not change and leaves out the well-known port', () => {
  const t = table({ name: 'r', action: { case: 'redirect', value: { scheme: 'https', statusCode: 301 } } });
  const r = routeRequest(t, get('/a?b=c'))!;
  if (r.action.t !== 'redirect') assert.fail('a redirect');
  assert.equal(redirectLocation(get('/a?b=c', { host: 'reviews:9080' }), r.action, r, 9080), 'https://reviews/a?b=c');
  const same = table({ name: 'h', action: { case: 'redirect', value: { hostname: 'other' } } }).routes[0]!;
  if (same.action.t !== 'redirect') assert.fail('a redirect');
  assert.equal(redirectLocation(get('/x'), same.action, same, 9080), 'http://other:9080/x');
});

test("a VirtualService's uri prefix matches character by character, and its rewrite replaces just that prefix", () => {
  const t = table({
    name: 'vs',
    matches: [{ path: { kind: { case: 'stringPrefix', value: '/api' } } }],
    action: forward('a'),
    rewrite: { path: { kind: { case: 'prefix', value: '/v1' } } },
  });
  assert.equal(routeRequest(t, get('/apiary'))?.name, 'vs', 'not by whole segments');
  assert.equal(routeRequest(t, get('/ap')), undefined);
  const route = routeRequest(t, get('/api/items?x=1'))!;
  assert.equal(editPath('/api/items?x=1', route.rewrite?.path, route), '/v1/items?x=1');
});

test('a subset backend keeps only its endpoints; mirrors and retry policies come through', () => {
  const t = table({
    name: 'sub',
    matches: [],
    action: {
      case: 'forward',
      value: {
        backends: [
          {
            namespace: 'shop',
            hostname: 'a.shop.svc.cluster.local',
            port: 80,
            weight: 1,
            subset: 'v2',
            endpoints: ['u1'],
          },
          { namespace: 'shop', hostname: 'a.shop.svc.cluster.local', port: 80, weight: 1 },
        ],
      },
    },
    mirrors: [{ backend: { namespace: 'shop', hostname: 'm.shop.svc.cluster.local', port: 80 }, percentage: 25 }],
    retries: { attempts: 4, retryOn: ['5xx'] },
  });
  const r = routeRequest(t, get('/'))!;
  assert.equal(r.action.t, 'forward');
  const [sub, whole] = r.action.t === 'forward' ? r.action.backends : [];
  assert.deepEqual([...(sub?.endpoints ?? [])], ['u1']);
  assert.equal(whole?.endpoints, undefined, 'no subset: every endpoint of the Service');
  assert.deepEqual(
    r.mirrors.map((m) => [m.backend.hostname, m.percentage]),
    [['m.shop.svc.cluster.local', 25]],
  );
  assert.equal(r.retry.attempts, 4);
  assert.deepEqual([...r.retry.retryOn], ['5xx']);
});
