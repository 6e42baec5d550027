import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_ENDPOINT_POLICY, EndpointBalancer, hashKey, type EndpointPolicy } from './endpoint-balancer.js';
import type { Workload } from '../ztunnel/state/workload.js';

/** Endpoints as the chooser sees them: only their UIDs matter here. */
const eps = (...uids: string[]): { w: Workload }[] => uids.map((uid) => ({ w: { uid, capacity: 1 } as Workload }));
const A_B_C = eps('a', 'b', 'c');

/** One pick from `cands` under `policy` with `key`, its lease ended with `result` (a status, or 'failure'). */
function once(
  bal: EndpointBalancer,
  policy: EndpointPolicy,
  cands: { w: Workload }[],
  key?: string,
  result?: number | 'failure',
): string | undefined {
  const p = bal.pick('c1', policy, key);
  const picked = p.chooser.choose(p.chooser.usable(cands));
  p.lease().end(result);
  return picked?.w.uid;
}

test('consistent hash: one key keeps its endpoint, keys spread over the endpoints, and a key moves only when its endpoint goes', () => {
  const bal = new EndpointBalancer();
  const policy: EndpointPolicy = { ...DEFAULT_ENDPOINT_POLICY, hash: { t: 'header', name: 'x-user' } };
  const first = new Map<string, string>();
  for (let i = 0; i < 60; i++) first.set(`user-${i}`, once(bal, policy, A_B_C, `user-${i}`)!);
  for (const [k, ep] of first) assert.equal(once(bal, policy, A_B_C, k), ep);
  assert.deepEqual(new Set(first.values()), new Set(['a', 'b', 'c']));
  const withoutC = eps('a', 'b');
  for (const [k, ep] of first) if (ep !== 'c') assert.equal(once(bal, policy, withoutC, k), ep, `${k} moved`);
});

test("the hash key comes from a header, a cookie, the client's address or a query parameter; a cookie with a ttl the request lacks is made up and set", () => {
  const r = { headers: { 'x-user': 'ann', cookie: 'a=1; session="s-9"' }, url: '/p?shard=7&x=1', sourceIp: '10.0.0.9' };
  const p = (hash: EndpointPolicy['hash']): EndpointPolicy => ({ ...DEFAULT_ENDPOINT_POLICY, hash });
  assert.deepEqual(hashKey(p({ t: 'header', name: 'x-user' }), r), { key: 'ann' });
  assert.deepEqual(hashKey(p({ t: 'cookie', name: 'session', path: '', ttlMs: 60_000 }), r), { key: 's-9' });
  assert.deepEqual(hashKey(p({ t: 'source-ip' }), r), { key: '10.0.0.9' });
  assert.deepEqual(hashKey(p({ t: 'query', name: 'shard' }), r), { key: '7' });
  assert.deepEqual(hashKey(p({ t: 'cookie', name: 'other', path: '', ttlMs: undefined }), r), { key: undefined });
  const made = hashKey(p({ t: 'cookie', name: 'other', path: '/app', ttlMs: 3_600_000 }), r);
  assert.match(made.setCookie ?? '', /^other="([0-9a-f]{16})"; Max-Age=3600; Path=\/app; HttpOnly$/);
  assert.equal(made.setCookie?.slice(7, 23), made.key);
});

test('ROUND_ROBIN takes the endpoints in turn; LEAST_REQUEST prefers the one of its two draws with fewer requests in flight', () => {
  const rr = new EndpointBalancer();
  const policy: EndpointPolicy = { ...DEFAULT_ENDPOINT_POLICY, simple: 'ROUND_ROBIN' };
  assert.deepEqual(
    [1, 2, 3, 4].map(() => once(rr, policy, A_B_C)),
    ['a', 'b', 'c', 'a'],
  );
  // Draws a then b: a has a request in flight, so b.
  const draws = [0, 0.5];
  const lr = new EndpointBalancer(() => draws.shift() ?? 0);
  const held = lr.pick('c1', DEFAULT_ENDPOINT_POLICY, undefined);
  held.chooser.choose(eps('a'));
  held.lease();
  const p = lr.pick('c1', DEFAULT_ENDPOINT_POLICY, undefined);
  assert.equal(p.chooser.choose(eps('a', 'b'))?.w.uid, 'b');
});

test('outlier detection: consecutive 5xx eject an endpoint for the base time times its ejections, a success resets the count, and no more than the share allowed is out, as Envoy counts it', () => {
  let now = 0;
  const bal = new EndpointBalancer(Math.random, () => now);
  const policy: EndpointPolicy = {
    simple: 'ROUND_ROBIN',
    hash: undefined,
    outlier: {
      consecutive5xx: 3,
      consecutiveGateway: 0,
      intervalMs: 10_000,
      baseEjectionMs: 30_000,
      maxEjectionPercent: 34,
      minHealthPercent: 0,
    },
  };
  const hit = (uid: string, result: number | 'failure'): void => {
    const p = bal.pick('c1', policy, undefined);
    p.chooser.usable(A_B_C);
    p.chooser.choose(eps(uid));
    p.lease().end(result);
  };
  const usable = (): string[] => {
    const p = bal.pick('c1', policy, undefined);
    return p.chooser.usable(A_B_C).map((x) => x.w.uid);
  };
  usable();
  hit('a', 500);
  hit('a', 'failure');
  hit('a', 200);
  hit('a', 503);
  hit('a', 500);
  assert.deepEqual(usable(), ['a', 'b', 'c'], 'a success in between starts the count again');
  hit('a', 500);
  assert.deepEqual(usable(), ['b', 'c']);
  for (let i = 0; i < 3; i++) hit('b', 502);
  assert.deepEqual(usable(), ['b', 'c'], 'two of three would be more than the 34% allowed');
  now = 30_001;
  assert.deepEqual(usable(), ['a', 'b', 'c'], 'back after the base ejection time');
  for (let i = 0; i < 3; i++) hit('a', 500);
  now = 60_002;
  assert.deepEqual(usable(), ['b', 'c'], 'ejected again soon after: twice the base time');
  now = 90_003;
  assert.deepEqual(usable(), ['a', 'b', 'c']);
});

test('outlier detection: gateway errors only count 502, 503, 504 and failures; below minHealthPercent ejections are disregarded', () => {
  const bal = new EndpointBalancer(Math.random, () => 0);
  const policy: EndpointPolicy = {
    simple: 'RANDOM',
    hash: undefined,
    outlier: {
      consecutive5xx: 0,
      consecutiveGateway: 2,
      intervalMs: 10_000,
      baseEjectionMs: 30_000,
      maxEjectionPercent: 100,
      minHealthPercent: 50,
    },
  };
  const hit = (uid: string, result: number | 'failure'): void => {
    const p = bal.pick('c1', policy, undefined);
    p.chooser.usable(eps('a', 'b'));
    p.chooser.choose(eps(uid));
    p.lease().end(result);
  };
  const usable = (): string[] =>
    bal
      .pick('c1', policy, undefined)
      .chooser.usable(eps('a', 'b'))
      .map((x) => x.w.uid);
  usable();
  hit('a', 500);
  hit('a', 500);
  assert.deepEqual(usable(), ['a', 'b'], '500 is not a gateway error');
  hit('a', 'failure');
  hit('a', 504);
  assert.deepEqual(usable(), ['b']);
  hit('b', 503);
  hit('b', 502);
  assert.deepEqual(usable(), ['a', 'b'], 'none of two in is below 50%: every endpoint is used');
});

test('outlier detection: at the default 10%, fewer than ten endpoints are never ejected (Envoy without always_eject_one_host)', () => {
  const bal = new EndpointBalancer(Math.random, () => 0);
  const policy: EndpointPolicy = {
    simple: 'RANDOM',
    hash: undefined,
    outlier: {
      consecutive5xx: 1,
      consecutiveGateway: 0,
      intervalMs: 10_000,
      baseEjectionMs: 30_000,
      maxEjectionPercent: 10,
      minHealthPercent: 0,
    },
  };
  const p = bal.pick('c1', policy, undefined);
  p.chooser.usable(A_B_C);
  p.chooser.choose(eps('a'));
  p.lease().end(500);
  assert.deepEqual(
    bal
      .pick('c1', policy, undefined)
      .chooser.usable(A_B_C)
      .map((x) => x.w.uid),
    ['a', 'b', 'c'],
  );
});

test('a retry goes to an endpoint the request has not tried while one is usable, whatever the hash says', () => {
  const bal = new EndpointBalancer();
  const policy: EndpointPolicy = { ...DEFAULT_ENDPOINT_POLICY, hash: { t: 'header', name: 'x-user' } };
  const tried = new Set<string>();
  for (let i = 0; i < 3; i++) {
    const p = bal.pick('c1', policy, 'ann', tried);
    const picked = p.chooser.choose(p.chooser.usable(A_B_C))!.w.uid;
    assert.ok(!tried.has(picked), `attempt ${i + 1} went back to ${picked}`);
    tried.add(picked);
  }
  const p = bal.pick('c1', policy, 'ann', tried);
  assert.notEqual(p.chooser.choose(p.chooser.usable(A_B_C)), undefined, 'all tried: any may be picked again');
});

test('a made-up cookie with a ttl of 0 is a session cookie, without Max-Age', () => {
  const made = hashKey(
    { ...DEFAULT_ENDPOINT_POLICY, hash: { t: 'cookie', name: 's', path: '', ttlMs: 0 } },
    { headers: {}, url: '/', sourceIp: '10.0.0.1' },
  );
  assert.match(made.setCookie ?? '', /^s="[0-9a-f]{16}"; HttpOnly$/);
});
