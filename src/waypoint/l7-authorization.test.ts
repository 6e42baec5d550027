import { test } from 'node:test';
import assert from 'node:assert/strict';
import { create, fromBinary, type MessageInitShape } from '@bufbuild/protobuf';
import { Action, PolicySchema } from '../api/amesh/waypoint/v1/waypoint_pb.js';
import { authorizeRequest, l7PoliciesFromXds, type L7Policy, type RequestAttributes } from './l7-authorization.js';

type PolicyInit = MessageInitShape<typeof PolicySchema>;

const exact = (value: string) => ({ matchType: { case: 'exact' as const, value } });
const prefix = (value: string) => ({ matchType: { case: 'prefix' as const, value } });
const suffix = (value: string) => ({ matchType: { case: 'suffix' as const, value } });
const presence = () => ({ matchType: { case: 'presence' as const, value: {} } });
const cidr = (address: number[], length: number) => ({ address: new Uint8Array(address), length });

const CART = 'shop/cart.shop.svc.cluster.local';

/** Converts policies that must all be understood. */
function policies(...inits: PolicyInit[]): readonly L7Policy[] {
  const out = l7PoliciesFromXds(inits.map((i) => create(PolicySchema, i)));
  assert.deepEqual(out.rejected, []);
  return out.policies;
}

/** A GET / to the cart Service from shop's `web` workload; `remoteIp` follows `sourceIp` unless given. */
function request(over: Partial<RequestAttributes> = {}): RequestAttributes {
  const sourceIp = over.sourceIp ?? '10.244.1.5';
  return {
    http: true,
    service: CART,
    method: 'GET',
    path: '/',
    host: 'cart.shop.svc.cluster.local',
    headers: {},
    sourcePrincipal: 'cluster.local/ns/shop/sa/web',
    sourceIp,
    remoteIp: sourceIp,
    destinationIp: '10.96.0.10',
    destinationPort: 8080,
    sni: undefined,
    jwt: undefined,
    ...over,
  };
}

function allowed(ps: readonly L7Policy[], over: Partial<RequestAttributes> = {}): boolean {
  return authorizeRequest(ps, request(over)).allowed;
}

test('a matching DENY denies even when an ALLOW matches too, and the reason names it', () => {
  const ps = policies(
    { name: 'shop/allow-all', action: Action.ALLOW, rules: [{}] },
    { name: 'shop/no-admin', action: Action.DENY, rules: [{ to: [{ paths: [prefix('/admin')] }] }] },
  );
  assert.deepEqual(authorizeRequest(ps, request({ path: '/admin/users' })), {
    allowed: false,
    reason: 'shop/no-admin',
    custom: [],
    audited: [],
    shadow: [],
  });
  const d = authorizeRequest(ps, request({ path: '/cart' }));
  assert.equal(d.allowed, true);
  assert.equal(d.reason, 'shop/allow-all');
});

test('with no ALLOW policy covering the request, what no DENY matches is allowed', () => {
  assert.deepEqual(authorizeRequest([], request()), {
    allowed: true,
    reason: 'no ALLOW policy applies',
    custom: [],
    audited: [],
    shadow: [],
  });
  const ps = policies({
    name: 'shop/no-delete',
    action: Action.DENY,
    rules: [{ to: [{ methods: [exact('DELETE')] }] }],
  });
  assert.equal(allowed(ps), true);
  assert.equal(allowed(ps, { method: 'DELETE' }), false);
});

test('when ALLOW policies cover the request and none matches, it is denied: "no ALLOW policy matched"', () => {
  const ps = policies(
    { name: 'shop/get-only', action: Action.ALLOW, rules: [{ to: [{ methods: [exact('GET')] }] }] },
    { name: 'shop/from-shop', action: Action.ALLOW, rules: [{ from: [{ namespaces: [exact('shop')] }] }] },
  );
  assert.equal(allowed(ps, { method: 'POST' }), true, 'the second ALLOW matches');
  const d = authorizeRequest(ps, request({ method: 'POST', sourcePrincipal: 'cluster.local/ns/other/sa/x' }));
  assert.equal(d.allowed, false);
  assert.equal(d.reason, 'no ALLOW policy matched');
});

test('services scopes a policy: one for another Service neither allows nor denies; no Service, only unscoped ones', () => {
  const ps = policies(
    { name: 'shop/cart-deny', action: Action.DENY, services: [CART], rules: [{}] },
    { name: 'shop/pay-allow', action: Action.ALLOW, services: ['shop/pay.shop.svc.cluster.local'], rules: [] },
  );
  assert.equal(allowed(ps), false, 'the cart DENY covers cart');
  assert.equal(allowed(ps, { service: 'shop/pay.shop.svc.cluster.local' }), false, 'pay is ALLOW-governed');
  assert.equal(allowed(ps, { service: 'shop/web.shop.svc.cluster.local' }), true, 'neither covers web');
  assert.equal(allowed(ps, { service: undefined }), true, 'a request for no Service: neither covers it');
  const unscoped = policies({ name: 'shop/deny-all', action: Action.DENY, rules: [{}] });
  assert.equal(allowed(unscoped, { service: undefined }), false);
});

test('paths match the path without its query or fragment, and an absolute-form target by its path', () => {
  const ps = policies({
    name: 'shop/health',
    action: Action.ALLOW,
    rules: [{ to: [{ paths: [exact('/healthz'), suffix('.css')], notPaths: [prefix('/private/')] }] }],
  });
  assert.equal(allowed(ps, { path: '/healthz' }), true);
  assert.equal(allowed(ps, { path: '/healthz?verbose=1' }), true);
  assert.equal(allowed(ps, { path: '/healthz#top' }), true);
  assert.equal(allowed(ps, { path: '/healthz/x' }), false);
  assert.equal(allowed(ps, { path: '/site.css?v=2' }), true);
  assert.equal(allowed(ps, { path: '/private/site.css' }), false, 'not_paths');
  assert.equal(allowed(ps, { path: 'http://cart.shop/healthz?x' }), true);
  assert.equal(allowed(ps, { path: 'http://cart.shop/private/a.css' }), false);
});

test('hosts match without case, with the Host port and with it stripped; not_hosts likewise', () => {
  const ps = policies({
    name: 'shop/by-host',
    action: Action.ALLOW,
    rules: [{ to: [{ hosts: [exact('Cart.Example.com'), suffix('.internal')], notHosts: [prefix('admin.')] }] }],
  });
  assert.equal(allowed(ps, { host: 'cart.example.com' }), true);
  assert.equal(allowed(ps, { host: 'CART.EXAMPLE.COM:8080' }), true, 'port stripped');
  assert.equal(allowed(ps, { host: 'cart.example.com.evil' }), false);
  assert.equal(allowed(ps, { host: 'db.internal:5432' }), true);
  assert.equal(allowed(ps, { host: 'admin.internal' }), false, 'not_hosts');
  const withPort = policies({ name: 'shop/p', action: Action.ALLOW, rules: [{ to: [{ hosts: [exact('cart:80')] }] }] });
  assert.equal(allowed(withPort, { host: 'cart:80' }), true, 'the full Host, port included');
  assert.equal(allowed(withPort, { host: 'cart' }), false);
  const v6 = policies({ name: 'shop/v6', action: Action.ALLOW, rules: [{ to: [{ hosts: [exact('[fd00::1]')] }] }] });
  assert.equal(allowed(v6, { host: '[FD00::1]:8080' }), true);
});

test('not_methods excludes the methods listed; methods match exactly', () => {
  const ps = policies({
    name: 'shop/read-only',
    action: Action.ALLOW,
    rules: [{ to: [{ notMethods: [exact('POST'), exact('DELETE')] }] }],
  });
  assert.equal(allowed(ps, { method: 'GET' }), true);
  assert.equal(allowed(ps, { method: 'POST' }), false);
  assert.equal(allowed(ps, { method: 'DELETE' }), false);
  const get = policies({ name: 'shop/get', action: Action.ALLOW, rules: [{ to: [{ methods: [exact('GET')] }] }] });
  assert.equal(allowed(get, { method: 'get' }), false);
});

test('principals, namespaces and not_namespaces match the peer identity; without one only the not_ lists hold', () => {
  const ps = policies({
    name: 'shop/peers',
    action: Action.ALLOW,
    rules: [
      { from: [{ principals: [exact('cluster.local/ns/shop/sa/web')] }] },
      { from: [{ namespaces: [prefix('team-')], notNamespaces: [exact('team-banned')] }] },
    ],
  });
  assert.equal(allowed(ps), true);
  assert.equal(allowed(ps, { sourcePrincipal: 'cluster.local/ns/shop/sa/other' }), false);
  assert.equal(allowed(ps, { sourcePrincipal: 'cluster.local/ns/team-a/sa/x' }), true);
  assert.equal(allowed(ps, { sourcePrincipal: 'cluster.local/ns/team-banned/sa/x' }), false);
  assert.equal(allowed(ps, { sourcePrincipal: undefined }), false, 'no identity matches no principal or namespace');

  const notNs = policies({
    name: 'shop/not-prod',
    action: Action.DENY,
    rules: [{ from: [{ notNamespaces: [exact('prod')] }] }],
  });
  assert.equal(allowed(notNs, { sourcePrincipal: 'cluster.local/ns/prod/sa/x' }), true);
  assert.equal(allowed(notNs, { sourcePrincipal: 'cluster.local/ns/dev/sa/x' }), false);
  assert.equal(allowed(notNs, { sourcePrincipal: undefined }), false, 'a plaintext peer is in no namespace');

  const notPrincipal = policies({
    name: 'shop/mtls-only',
    action: Action.DENY,
    rules: [{ from: [{ notPrincipals: [presence()] }] }],
  });
  assert.equal(allowed(notPrincipal), true);
  assert.equal(allowed(notPrincipal, { sourcePrincipal: undefined }), false);
});

test('ip_blocks match IPv4 and IPv6 CIDRs; an IPv4-mapped client address counts as IPv4', () => {
  const ps = policies({
    name: 'shop/nets',
    action: Action.ALLOW,
    rules: [
      {
        from: [
          {
            ipBlocks: [cidr([10, 244, 0, 0], 16), cidr([0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], 8)],
            notIpBlocks: [cidr([10, 244, 9, 0], 24)],
          },
        ],
      },
    ],
  });
  assert.equal(allowed(ps, { sourceIp: '10.244.1.5' }), true);
  assert.equal(allowed(ps, { sourceIp: '10.245.1.5' }), false);
  assert.equal(allowed(ps, { sourceIp: '10.244.9.77' }), false, 'not_ip_blocks');
  assert.equal(allowed(ps, { sourceIp: '::ffff:10.244.1.5' }), true);
  assert.equal(allowed(ps, { sourceIp: 'fd12:3456::9' }), true);
  assert.equal(allowed(ps, { sourceIp: 'fe80::1' }), false);
  const odd = policies({
    name: 'shop/odd-prefix',
    action: Action.ALLOW,
    rules: [{ from: [{ ipBlocks: [cidr([0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], 33)] }] }],
  });
  assert.equal(allowed(odd, { sourceIp: '2001:db8:7fff::1' }), true);
  assert.equal(allowed(odd, { sourceIp: '2001:db8:8000::1' }), false);
  const all = policies({
    name: 'shop/any-v4',
    action: Action.ALLOW,
    rules: [{ from: [{ ipBlocks: [cidr([0, 0, 0, 0], 0)] }] }],
  });
  assert.equal(allowed(all, { sourceIp: '203.0.113.9' }), true);
  assert.equal(allowed(all, { sourceIp: '2001:db8::1' }), false, 'an IPv4 network holds no IPv6 address');
});

test('request.headers conditions: name without case, any value of a repeated header, presence for an empty value', () => {
  const ps = policies({
    name: 'shop/canary',
    action: Action.ALLOW,
    rules: [{ when: [{ key: 'request.headers[X-Canary]', values: [exact('yes')] }] }],
  });
  assert.equal(allowed(ps, { headers: { 'x-canary': 'yes' } }), true);
  assert.equal(allowed(ps, { headers: { 'x-canary': ['no', 'yes'] } }), true);
  assert.equal(allowed(ps, { headers: { 'x-canary': 'no' } }), false);
  assert.equal(allowed(ps, { headers: {} }), false);

  const present = policies({
    name: 'shop/debug-header',
    action: Action.DENY,
    rules: [{ when: [{ key: 'request.headers[x-debug]', values: [presence()] }] }],
  });
  assert.equal(allowed(present, { headers: { 'x-debug': '' } }), false);
  assert.equal(allowed(present, { headers: {} }), true);

  const notValues = policies({
    name: 'shop/not-internal',
    action: Action.DENY,
    rules: [{ when: [{ key: 'request.headers[x-tier]', notValues: [exact('internal')] }] }],
  });
  assert.equal(allowed(notValues, { headers: { 'x-tier': 'internal' } }), true);
  assert.equal(allowed(notValues, { headers: { 'x-tier': 'public' } }), false);
  assert.equal(allowed(notValues, { headers: {} }), false, 'an absent header matches none of not_values');

  const authority = policies({
    name: 'shop/authority',
    action: Action.ALLOW,
    rules: [{ when: [{ key: 'request.headers[:authority]', values: [prefix('cart.')] }] }],
  });
  assert.equal(allowed(authority, { host: 'cart.shop:80' }), true);
  assert.equal(allowed(authority, { host: 'web.shop' }), false);
});

test('request.auth.claims matches a nested claim and any element of a list claim; a missing claim matches nothing', () => {
  const ps = policies({
    name: 'shop/claims',
    action: Action.ALLOW,
    rules: [
      { when: [{ key: 'request.auth.claims[groups]', values: [exact('admins')] }] },
      { when: [{ key: 'request.auth.claims[realm_access][role]', values: [prefix('ops-')] }] },
    ],
  });
  const jwt = (claims: Record<string, unknown>) => ({
    principal: 'https://issuer.example/alice',
    audiences: ['cart'],
    presenter: undefined,
    claims,
  });
  assert.equal(allowed(ps, { jwt: jwt({ groups: ['users', 'admins'] }) }), true);
  assert.equal(allowed(ps, { jwt: jwt({ groups: 'admins' }) }), true);
  assert.equal(allowed(ps, { jwt: jwt({ groups: ['users'] }) }), false);
  assert.equal(allowed(ps, { jwt: jwt({ groups: [1, true] }) }), false);
  assert.equal(allowed(ps, { jwt: jwt({ realm_access: { role: 'ops-oncall' } }) }), true);
  assert.equal(allowed(ps, { jwt: jwt({ realm_access: { role: ['dev', 'ops-lead'] } }) }), true);
  assert.equal(allowed(ps, { jwt: jwt({ realm_access: 'ops-x' }) }), false);
  assert.equal(allowed(ps, { jwt: jwt({}) }), false);
  assert.equal(allowed(ps, { jwt: undefined }), false);

  const aud = policies({
    name: 'shop/aud',
    action: Action.ALLOW,
    rules: [
      {
        when: [
          { key: 'request.auth.audiences', values: [exact('cart')] },
          { key: 'request.auth.presenter', values: [exact('web-app')] },
          { key: 'request.auth.principal', values: [suffix('/alice')] },
        ],
      },
    ],
  });
  assert.equal(allowed(aud, { jwt: { ...jwt({}), audiences: ['pay', 'cart'], presenter: 'web-app' } }), true);
  assert.equal(allowed(aud, { jwt: { ...jwt({}), audiences: ['pay'], presenter: 'web-app' } }), false);
  assert.equal(allowed(aud, { jwt: { ...jwt({}), presenter: undefined } }), false);
});

test('request_principals never match a request without a JWT; not_request_principals then hold', () => {
  const ps = policies({
    name: 'shop/jwt-required',
    action: Action.ALLOW,
    rules: [{ from: [{ requestPrincipals: [presence()] }] }],
  });
  assert.equal(allowed(ps, { jwt: undefined }), false);
  assert.equal(
    allowed(ps, {
      jwt: { principal: 'https://issuer.example/alice', audiences: [], presenter: undefined, claims: {} },
    }),
    true,
  );
  const deny = policies({
    name: 'shop/deny-anonymous',
    action: Action.DENY,
    rules: [{ from: [{ notRequestPrincipals: [presence()] }] }],
  });
  assert.equal(allowed(deny, { jwt: undefined }), false);
});

test('AUDIT and dry-run policies never change the decision; dry-run ones are reported in shadow', () => {
  const ps = policies(
    { name: 'shop/audit-posts', action: Action.AUDIT, rules: [{ to: [{ methods: [exact('POST')] }] }] },
    { name: 'shop/dry-deny', action: Action.DENY, dryRun: true, rules: [{ to: [{ methods: [exact('POST')] }] }] },
    { name: 'shop/dry-allow', action: Action.ALLOW, dryRun: true, rules: [{ to: [{ paths: [exact('/ok')] }] }] },
  );
  assert.deepEqual(authorizeRequest(ps, request({ method: 'POST', path: '/x' })), {
    allowed: true,
    reason: 'no ALLOW policy applies',
    custom: [],
    audited: ['shop/audit-posts'],
    shadow: [
      { policy: 'shop/dry-deny', wouldDeny: true },
      { policy: 'shop/dry-allow', wouldDeny: true },
    ],
  });
  assert.deepEqual(authorizeRequest(ps, request({ method: 'GET', path: '/ok' })), {
    allowed: true,
    reason: 'no ALLOW policy applies',
    custom: [],
    audited: [],
    shadow: [
      { policy: 'shop/dry-deny', wouldDeny: false },
      { policy: 'shop/dry-allow', wouldDeny: false },
    ],
  });
  const denyAll = policies(
    { name: 'shop/deny-all', action: Action.DENY, rules: [{}] },
    { name: 'shop/audit-all', action: Action.AUDIT, rules: [{}] },
    { name: 'shop/dry-allow-all', action: Action.ALLOW, dryRun: true, rules: [{}] },
  );
  const d = authorizeRequest(denyAll, request());
  assert.equal(d.allowed, false);
  assert.equal(d.reason, 'shop/deny-all');
  assert.deepEqual(d.audited, ['shop/audit-all']);
});

test('a matching CUSTOM policy is returned in custom, and the decision still follows DENY and ALLOW', () => {
  const ps = policies(
    {
      name: 'shop/ext',
      action: Action.CUSTOM,
      provider: 'oauth2-proxy',
      rules: [{ to: [{ paths: [prefix('/api/')] }] }],
    },
    { name: 'shop/dry-ext', action: Action.CUSTOM, provider: 'opa', dryRun: true, rules: [{}] },
    { name: 'shop/only-get', action: Action.ALLOW, rules: [{ to: [{ methods: [exact('GET')] }] }] },
  );
  const d = authorizeRequest(ps, request({ path: '/api/items' }));
  assert.equal(d.allowed, true);
  assert.deepEqual(
    d.custom.map((p) => [p.name, p.provider]),
    [['shop/ext', 'oauth2-proxy']],
  );
  assert.deepEqual(d.shadow, [{ policy: 'shop/dry-ext', wouldDeny: false }], 'a dry-run CUSTOM is never consulted');
  const post = authorizeRequest(ps, request({ method: 'POST', path: '/api/items' }));
  assert.equal(post.allowed, false);
  assert.equal(post.custom.length, 1);
  assert.deepEqual(authorizeRequest(ps, request({ path: '/static/a.js' })).custom, []);
});

test('an unknown condition key rejects the policy, naming it; its ALLOW stand-in allows nothing', () => {
  const out = l7PoliciesFromXds([
    create(PolicySchema, {
      name: 'shop/geo',
      action: Action.ALLOW,
      services: [CART],
      rules: [{ when: [{ key: 'request.geo.country', values: [exact('NL')] }] }],
    }),
  ]);
  assert.equal(out.rejected.length, 1);
  assert.match(out.rejected[0]!, /shop\/geo.*request\.geo\.country/);
  const [p] = out.policies;
  assert.equal(p?.name, 'shop/geo');
  assert.deepEqual(p?.services, [CART]);
  assert.deepEqual(p?.rules, []);
  assert.ok(p?.rejected);
  const d = authorizeRequest(out.policies, request({ headers: {} }));
  assert.deepEqual([d.allowed, d.reason], [false, 'no ALLOW policy matched']);
  assert.equal(authorizeRequest(out.policies, request({ service: 'shop/other.shop.svc.cluster.local' })).allowed, true);
});

test("an unknown condition key rejects the policy; its DENY stand-in denies every request it covers, a CUSTOM's asks", () => {
  const out = l7PoliciesFromXds([
    create(PolicySchema, {
      name: 'shop/block-geo',
      action: Action.DENY,
      rules: [
        {
          to: [{ paths: [exact('/never')] }],
          when: [{ key: 'experimental.envoy.filters.x[y]', values: [exact('z')] }],
        },
      ],
    }),
    create(PolicySchema, {
      name: 'shop/ext',
      action: Action.CUSTOM,
      provider: 'opa',
      rules: [{ when: [{ key: 'request.headers', values: [exact('z')] }] }],
    }),
  ]);
  assert.equal(out.rejected.length, 2);
  assert.match(out.rejected[0]!, /shop\/block-geo/);
  assert.match(out.rejected[1]!, /shop\/ext/);
  const d = authorizeRequest(out.policies, request({ path: '/anything' }));
  assert.equal(d.allowed, false);
  assert.equal(d.reason, 'shop/block-geo');
  assert.deepEqual(
    d.custom.map((p) => p.name),
    ['shop/ext'],
  );
});

test('malformed addresses, empty or mistyped conditions, unknown actions and a provider-less CUSTOM fail closed', () => {
  const bad: PolicyInit[] = [
    { name: 'ns/five-bytes', action: Action.DENY, rules: [{ from: [{ ipBlocks: [cidr([1, 2, 3, 4, 5], 8)] }] }] },
    { name: 'ns/long-prefix', action: Action.DENY, rules: [{ from: [{ ipBlocks: [cidr([1, 2, 3, 4], 33)] }] }] },
    { name: 'ns/empty-condition', action: Action.DENY, rules: [{ when: [{ key: 'source.namespace' }] }] },
    {
      name: 'ns/ip-values',
      action: Action.DENY,
      rules: [{ when: [{ key: 'source.ip', values: [exact('1.2.3.4')] }] }],
    },
    {
      name: 'ns/port-prefix',
      action: Action.DENY,
      rules: [{ when: [{ key: 'destination.port', values: [prefix('80')] }] }],
    },
    { name: 'ns/no-match-type', action: Action.DENY, rules: [{ to: [{ methods: [{}] }] }] },
    { name: 'ns/no-provider', action: Action.CUSTOM, rules: [{}] },
  ];
  // An action value this build does not know, as it arrives on the wire: name (field 1), action 9 (field 2).
  const name = new TextEncoder().encode('ns/action-9');
  const unknownAction = fromBinary(PolicySchema, Uint8Array.of(0x0a, name.length, ...name, 0x10, 9));
  const messages = [...bad.map((b) => create(PolicySchema, b)), unknownAction];
  const out = l7PoliciesFromXds(messages);
  assert.equal(out.rejected.length, messages.length);
  out.rejected.forEach((reason, i) => assert.ok(reason.includes(messages[i]!.name), reason));
  for (const p of out.policies) {
    assert.ok(p.rejected);
    assert.equal(p.rules.length, 1, `${p.name} matches every request`);
  }
  assert.equal(out.policies.at(-1)?.action, 'DENY', 'an unknown action is taken as DENY');
  assert.equal(authorizeRequest(out.policies, request()).allowed, false);
});

test('conditions on destination.ip, destination.port, remote.ip, source.principal and connection.sni', () => {
  const ps = policies({
    name: 'shop/conn',
    action: Action.ALLOW,
    rules: [
      {
        when: [
          { key: 'destination.ip', cidrs: [cidr([10, 96, 0, 0], 12)] },
          { key: 'destination.port', values: [exact('8080'), exact('9090')], notValues: [exact('9090')] },
          { key: 'remote.ip', notCidrs: [cidr([192, 0, 2, 0], 24)] },
          { key: 'source.principal', values: [suffix('/sa/web')] },
          { key: 'connection.sni', notValues: [exact('blocked.example')] },
        ],
      },
    ],
  });
  assert.equal(allowed(ps), true);
  assert.equal(allowed(ps, { destinationIp: '10.112.0.1' }), false);
  assert.equal(allowed(ps, { destinationPort: 9090 }), false);
  assert.equal(allowed(ps, { remoteIp: '192.0.2.7' }), false);
  assert.equal(allowed(ps, { sourcePrincipal: 'cluster.local/ns/shop/sa/api' }), false);
  assert.equal(allowed(ps, { sni: 'blocked.example' }), false);
  assert.equal(allowed(ps, { sni: 'cart.example' }), true);
});

test('an empty rules list matches nothing; a rule with nothing in it matches every request', () => {
  const none = policies({ name: 'shop/allow-nothing', action: Action.ALLOW, rules: [] });
  assert.equal(allowed(none), false);
  const every = policies({ name: 'shop/allow-everything', action: Action.ALLOW, rules: [{}] });
  assert.equal(allowed(every, { sourcePrincipal: undefined, method: 'PATCH', path: '/x' }), true);
  const denyNone = policies({ name: 'shop/deny-nothing', action: Action.DENY, rules: [] });
  assert.equal(allowed(denyNone), true);
  const denyEvery = policies({ name: 'shop/deny-everything', action: Action.DENY, rules: [{}] });
  assert.equal(allowed(denyEvery), false);
  const emptySource = policies({ name: 'shop/empty-source', action: Action.ALLOW, rules: [{ from: [{}], to: [{}] }] });
  assert.equal(allowed(emptySource, { sourcePrincipal: undefined }), true, 'an empty Source or Operation holds');
});

test('the converted model is frozen plain data: no protobuf message survives the conversion', () => {
  const { policies: ps } = l7PoliciesFromXds([
    create(PolicySchema, {
      name: 'shop/full',
      action: Action.ALLOW,
      services: [CART],
      rules: [
        {
          from: [{ principals: [exact('a')], ipBlocks: [cidr([10, 0, 0, 0], 8)] }],
          to: [{ hosts: [exact('A.example')], ports: [80] }],
          when: [{ key: 'request.auth.claims[a][b]', values: [exact('c')] }],
        },
      ],
    }),
  ]);
  const seen: unknown[] = [];
  const walk = (v: unknown): void => {
    if (typeof v !== 'object' || v === null) return;
    assert.ok(Object.isFrozen(v), `frozen: ${JSON.stringify(v)}`);
    assert.ok(!('$typeName' in v), 'not a protobuf message');
    assert.ok(!(v instanceof Uint8Array));
    seen.push(v);
    for (const x of Object.values(v)) walk(x);
  };
  walk(ps);
  assert.ok(seen.length > 10);
  assert.deepEqual(ps[0]?.rules[0]?.to[0]?.hosts, [{ kind: 'exact', value: 'a.example' }]);
  assert.equal(ps[0]?.rules[0]?.from[0]?.ipBlocks[0]?.text, '10.0.0.0/8');
});

test('on a TCP connection an ALLOW rule that names HTTP attributes never holds, and a DENY rule holds without them', () => {
  const tcp = { http: false, method: '', path: '', host: '' };
  const allowGetFromWeb = policies({
    name: 'shop/get',
    action: Action.ALLOW,
    rules: [{ from: [{ namespaces: [exact('shop')] }], to: [{ methods: [exact('GET')] }] }],
  });
  assert.equal(allowed(allowGetFromWeb), true);
  assert.equal(allowed(allowGetFromWeb, tcp), false, 'the rule is dropped on TCP: nothing allows');
  const denyDeleteFromWeb = policies({
    name: 'shop/no-delete',
    action: Action.DENY,
    rules: [{ from: [{ namespaces: [exact('shop')] }], to: [{ methods: [exact('DELETE')] }] }],
  });
  assert.equal(allowed(denyDeleteFromWeb), true);
  assert.equal(allowed(denyDeleteFromWeb, tcp), false, 'wider on TCP: the namespace alone denies');
  assert.equal(allowed(denyDeleteFromWeb, { ...tcp, sourcePrincipal: 'cluster.local/ns/other/sa/x' }), true);
});
