import { test } from 'node:test';
import assert from 'node:assert/strict';
import { create, type MessageInitShape } from '@bufbuild/protobuf';
import { anyPack, EmptySchema, type Any } from '@bufbuild/protobuf/wkt';
import { AddressSchema, TunnelProtocol, WorkloadSchema } from '../../api/istio/workload/workload_pb.js';
import { Action, AuthorizationSchema, Scope } from '../../api/istio/security/authorization_pb.js';
import { addressFromXds, authorizationFromXds } from './convert.js';
import { ProxyState } from './proxy-state.js';
import { evaluate, type RbacConnection } from '../rbac.js';
import type { LocalWorkload } from './local-config.js';
import type { Authorization } from './policy.js';

/** An enum number the generated code does not define (what a newer istiod could send). */
const unknown = <E>(n: number): E => n as unknown as E;
const authz = (init: MessageInitShape<typeof AuthorizationSchema>): Any =>
  anyPack(AuthorizationSchema, create(AuthorizationSchema, init));
const workloadAny = (init: MessageInitShape<typeof WorkloadSchema>): Any =>
  anyPack(AddressSchema, create(AddressSchema, { type: { case: 'workload', value: init } }));

test('xDS Authorization: ALLOW/DENY and the three scopes convert by enum, rules → clauses → matches', () => {
  const r = authorizationFromXds(
    'ns/p',
    authz({
      name: 'p',
      namespace: 'ns',
      scope: Scope.WORKLOAD_SELECTOR,
      action: Action.DENY,
      rules: [
        {
          clauses: [
            {
              matches: [
                {
                  destinationPorts: [8080],
                  principals: [{ matchType: { case: 'presence', value: create(EmptySchema) } }],
                },
              ],
            },
          ],
        },
      ],
    }),
  );
  assert.equal(r.rejected, undefined);
  assert.equal(r.policy.scope, 'WorkloadSelector');
  assert.equal(r.policy.action, 'Deny');
  assert.deepEqual(r.policy.rules[0]?.[0]?.[0]?.destinationPorts, [8080]);
  assert.deepEqual(r.policy.rules[0]?.[0]?.[0]?.principals, [{ Presence: [] }]);
  for (const [scope, want] of [
    [Scope.GLOBAL, 'Global'],
    [Scope.NAMESPACE, 'Namespace'],
  ] as const) {
    assert.equal(authorizationFromXds('ns/p', authz({ name: 'p', namespace: 'ns', scope })).policy.scope, want);
  }
});

const rejects: { name: string; any: Any | undefined; why: RegExp; scope: Authorization['scope'] }[] = [
  {
    name: 'an unknown scope is rejected (never read as WORKLOAD_SELECTOR); its reach is unknown, so it stands in as Global',
    any: authz({ name: 'p', namespace: 'ns', scope: unknown<Scope>(7) }),
    why: /unknown scope 7/,
    scope: 'Global',
  },
  {
    name: 'an unknown action is rejected (never read as ALLOW), in the scope it claims',
    any: authz({ name: 'p', namespace: 'ns', scope: Scope.NAMESPACE, action: unknown<Action>(9) }),
    why: /unknown action 9/,
    scope: 'Namespace',
  },
  {
    name: 'a string match with no match type is rejected',
    any: authz({
      name: 'p',
      namespace: 'ns',
      scope: Scope.WORKLOAD_SELECTOR,
      rules: [{ clauses: [{ matches: [{ principals: [{}] }] }] }],
    }),
    why: /empty string match/,
    scope: 'WorkloadSelector',
  },
  {
    name: 'an IP match of 5 bytes is rejected',
    any: authz({
      name: 'p',
      namespace: 'ns',
      scope: Scope.NAMESPACE,
      rules: [{ clauses: [{ matches: [{ sourceIps: [{ address: new Uint8Array(5), length: 8 }] }] }] }],
    }),
    why: /invalid IP match/,
    scope: 'Namespace',
  },
  {
    name: 'an undecodable Any is rejected and stands in as Global',
    any: {
      $typeName: 'google.protobuf.Any',
      typeUrl: 'type.googleapis.com/istio.security.Authorization',
      value: new Uint8Array([0xff, 0xff]),
    },
    why: /cannot decode/,
    scope: 'Global',
  },
  {
    name: 'a missing resource is rejected',
    any: undefined,
    why: /not an istio.security.Authorization/,
    scope: 'Global',
  },
];

for (const c of rejects) {
  test(`xDS Authorization NACK: ${c.name}`, () => {
    const r = authorizationFromXds('ns/p', c.any);
    assert.match(r.rejected ?? '', c.why);
    assert.deepEqual(
      { ...r.policy, rejected: undefined },
      { name: 'p', namespace: 'ns', scope: c.scope, action: 'Deny', rules: [[]], dryRun: false, rejected: undefined },
    );
  });
}

const addressRejects: { name: string; any: Any | undefined; why: RegExp }[] = [
  { name: 'a workload without a uid', any: workloadAny({ name: 'w' }), why: /no uid/ },
  {
    name: 'a workload with a 3-byte address',
    any: workloadAny({ uid: 'u', addresses: [new Uint8Array(3)] }),
    why: /3 bytes/,
  },
  {
    name: 'a workload on legacy Istio mTLS',
    any: workloadAny({ uid: 'u', tunnelProtocol: TunnelProtocol.LEGACY_ISTIO_MTLS }),
    why: /legacy istio mtls/,
  },
  {
    name: 'a service with a 2-byte VIP',
    any: anyPack(
      AddressSchema,
      create(AddressSchema, {
        type: {
          case: 'service',
          value: { name: 's', namespace: 'ns', hostname: 'h', addresses: [{ address: new Uint8Array(2) }] },
        },
      }),
    ),
    why: /VIP of 2 bytes/,
  },
  {
    name: 'an Address with neither a workload nor a service',
    any: anyPack(AddressSchema, create(AddressSchema, {})),
    why: /neither/,
  },
];

for (const c of addressRejects) {
  test(`xDS Address NACK: ${c.name}`, () => {
    const r = addressFromXds('name', c.any);
    assert.ok('rejected' in r);
    assert.match(r.rejected, c.why);
  });
}

test('xDS Address: a workload converts with its IPs, services and policy keys', () => {
  const r = addressFromXds(
    'u',
    workloadAny({
      uid: 'u',
      name: 'w',
      namespace: 'ns',
      addresses: [new Uint8Array([127, 72, 0, 1])],
      tunnelProtocol: TunnelProtocol.HBONE,
      authorizationPolicies: ['ns/p'],
      services: { 'ns/s.ns.svc.cluster.local': { ports: [{ servicePort: 80, targetPort: 8080 }] } },
    }),
  );
  assert.ok('workload' in r);
  assert.deepEqual(r.workload.workload.workloadIps, ['127.72.0.1']);
  assert.equal(r.workload.workload.protocol, 'HBONE');
  assert.deepEqual(r.workload.workload.authorizationPolicies, ['ns/p']);
  assert.deepEqual(r.workload.services, { 'ns/s.ns.svc.cluster.local': { '80': 8080 } });
});

// Fail closed: a rejected policy denies what it could cover, and nothing else.
function workload(name: string, namespace: string, policies: string[] = []): LocalWorkload {
  const r = addressFromXds(
    name,
    workloadAny({
      uid: `uid-${name}`,
      name,
      namespace,
      addresses: [new Uint8Array([127, 72, 0, name.length])],
      authorizationPolicies: policies,
    }),
  );
  assert.ok('workload' in r);
  return r.workload;
}
const conn: RbacConnection = {
  srcIp: '127.72.0.9',
  dstIp: '127.72.0.1',
  dstPort: 8080,
  srcIdentity: { trustDomain: 'cluster.local', namespace: 'a', serviceAccount: 'x' },
};

function decide(
  policies: Authorization[],
  w: LocalWorkload,
  others: LocalWorkload[] = [],
): ReturnType<typeof evaluate> {
  const s = new ProxyState();
  s.apply({ workloads: [w, ...others], services: [], policies });
  return evaluate(s.policiesFor(w.workload), conn);
}

test('a rejected ALLOW policy named by a workload denies that workload (never allow-all)', () => {
  const bad = authorizationFromXds(
    'a/only-x',
    authz({ name: 'only-x', namespace: 'a', scope: Scope.WORKLOAD_SELECTOR, action: unknown<Action>(5) }),
  );
  const d = decide([bad.policy], workload('w', 'a', ['a/only-x']));
  assert.equal(d.allowed, false);
  assert.match(d.allowed ? '' : d.reason, /a\/only-x could not be accepted \(unknown action 5\)/);
  assert.equal(
    decide([bad.policy], workload('other', 'a')).allowed,
    true,
    'a workload that does not name it is not affected',
  );
});

test('a policy a workload names but ztunnel does not have denies that workload', () => {
  const d = decide([], workload('w', 'a', ['a/never-sent']));
  assert.equal(d.allowed, false);
  assert.match(
    d.allowed ? '' : d.reason,
    /a\/never-sent could not be accepted \(named by the workload but not received\)/,
  );
});

test('a rejected Namespace policy denies the workloads of its namespace only', () => {
  const bad = authorizationFromXds(
    'a/ns-wide',
    authz({
      name: 'ns-wide',
      namespace: 'a',
      scope: Scope.NAMESPACE,
      rules: [{ clauses: [{ matches: [{ principals: [{}] }] }] }],
    }),
  );
  assert.equal(decide([bad.policy], workload('w', 'a')).allowed, false);
  assert.equal(decide([bad.policy], workload('w', 'b')).allowed, true);
});

test('a rejected Global policy, or one whose scope is unknown, denies every workload', () => {
  for (const scope of [Scope.GLOBAL, unknown<Scope>(11)]) {
    const bad = authorizationFromXds(
      'istio-system/mesh',
      authz({ name: 'mesh', namespace: 'istio-system', scope, action: unknown<Action>(3) }),
    );
    assert.equal(decide([bad.policy], workload('w', 'a')).allowed, false);
    assert.equal(decide([bad.policy], workload('w', 'b')).allowed, false);
  }
});

test('a rejected dry-run policy stays dry-run: it is noted, never enforced', () => {
  const bad = authorizationFromXds(
    'a/trial',
    authz({ name: 'trial', namespace: 'a', scope: Scope.NAMESPACE, action: unknown<Action>(5), dryRun: true }),
  );
  assert.equal(bad.rejected, 'unknown action 5');
  const d = decide([bad.policy], workload('w', 'a'));
  assert.equal(d.allowed, true);
  assert.match(d.dryRunNotes.join(' '), /a\/trial could not be accepted \(unknown action 5\)/);
});
