import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isResource, parseManifests, type Manifest, type ResourceOf } from '../registry/manifest-dir.js';
import { convertAuthorizationPolicy } from './authorization.js';
import { AuthzAction, AuthzScope, type AuthorizationModel, type MatchModel } from './types.js';

function policy(o: Manifest | undefined): ResourceOf<'AuthorizationPolicy'> {
  assert.ok(o !== undefined && isResource(o) && o.kind === 'AuthorizationPolicy');
  return o;
}

function convert(spec: string, extra = ''): ReturnType<typeof convertAuthorizationPolicy> {
  const { objects, errors } = parseManifests(
    'ap.yaml',
    `apiVersion: security.istio.io/v1\nkind: AuthorizationPolicy\nmetadata: {name: p, namespace: ns${extra}}\nspec: ${spec}\n`,
  );
  assert.deepEqual(errors, []);
  return convertAuthorizationPolicy(policy(objects[0]), 'istio-system');
}

const ipText = (x: { address: Uint8Array; length: number }): string => `${[...x.address].join('.')}/${x.length}`;

/** Only the non-empty fields of a match, for readable expectations. */
function slim(m: MatchModel): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(m)
      .filter(([, v]) => (v as unknown[]).length > 0)
      .map(([k, v]) => [
        k,
        (v as unknown[]).map((x) =>
          x instanceof Object && 'address' in x ? ipText(x as unknown as { address: Uint8Array; length: number }) : x,
        ),
      ]),
  );
}
function shape(p: AuthorizationModel | undefined): unknown {
  return p?.rules.map((r) => r.clauses.map((c) => c.matches.map(slim)));
}

const cases: {
  name: string;
  spec: string;
  meta?: string;
  want: unknown;
  scope?: number;
  action?: number;
  skipped?: RegExp;
}[] = [
  { name: 'spec: {} has zero rules (an ALLOW that denies everything)', spec: '{}', want: [] },
  { name: 'rules: [{}] is one rule with zero clauses (match-all)', spec: '{rules: [{}]}', want: [[]] },
  {
    name: 'to[] entries become one clause of port matches',
    spec: '{rules: [{to: [{operation: {ports: ["80"]}}, {operation: {notPorts: ["9090"]}}]}]}',
    want: [[[{ destinationPorts: [80] }, { notDestinationPorts: [9090] }]]],
  },
  {
    name: 'from[] entries: ipBlocks (/32 added), namespaces, principals and service accounts (bare = policy namespace)',
    spec: '{rules: [{from: [{source: {ipBlocks: ["10.0.0.1", "10.1.0.0/16"], namespaces: ["prod*"], principals: ["*"], serviceAccounts: ["sa1", "other/sa2"]}}]}]}',
    want: [
      [
        [
          {
            namespaces: [{ prefix: 'prod' }],
            serviceAccounts: [
              { namespace: 'ns', serviceAccount: 'sa1' },
              { namespace: 'other', serviceAccount: 'sa2' },
            ],
            principals: [{ presence: true }],
            sourceIps: ['10.0.0.1/32', '10.1.0.0/16'],
          },
        ],
      ],
    ],
  },
  {
    name: 'each when condition is its own clause (AND)',
    spec: '{rules: [{when: [{key: source.namespace, values: ["*-test"]}, {key: destination.port, notValues: ["22"]}]}]}',
    want: [[[{ namespaces: [{ suffix: '-test' }] }], [{ notDestinationPorts: [22] }]]],
  },
  {
    name: 'an ALLOW rule with L7 attributes is dropped entirely',
    spec: '{rules: [{to: [{operation: {methods: ["GET"], ports: ["80"]}}]}, {}]}',
    want: [[]],
  },
  {
    name: 'a DENY rule keeps only its L4 parts; an L7-only from entry becomes an empty (never-matching) Match',
    spec: '{action: DENY, rules: [{from: [{source: {requestPrincipals: ["*"]}}], to: [{operation: {paths: ["/admin"], ports: ["8080"]}}]}]}',
    want: [[[{ destinationPorts: [8080] }], [{}]]],
    action: AuthzAction.DENY,
  },
  {
    name: 'a DENY rule with an L7 when key cannot match',
    spec: '{action: DENY, rules: [{when: [{key: "request.headers[x]", values: ["y"]}]}]}',
    want: [[[{}]]],
    action: AuthzAction.DENY,
  },
  {
    name: 'an ALLOW whose only port is above 65535 can never match: rule dropped',
    spec: '{rules: [{to: [{operation: {ports: ["70000"]}}]}]}',
    want: [],
  },
  {
    name: 'a DENY keeps its valid ports and skips only the invalid one (Istio stringToPort)',
    spec: '{action: DENY, rules: [{to: [{operation: {ports: ["8080", "80a"]}}]}]}',
    want: [[[{ destinationPorts: [8080] }]]],
    action: AuthzAction.DENY,
  },
  {
    name: 'invalid ipBlocks are skipped, valid ones kept (Istio stringToIP)',
    spec: '{rules: [{from: [{source: {ipBlocks: ["10.0.0.1", "10.0.0.0/33", "nope"], notIpBlocks: ["10.0.0.9/40", "10.2.0.0/16"]}}]}]}',
    want: [[[{ sourceIps: ['10.0.0.1/32'], notSourceIps: ['10.2.0.0/16'] }]]],
  },
  {
    name: 'an ALLOW operation whose only port is invalid never matches, even beside notPorts (never widened to "any port but")',
    spec: '{rules: [{to: [{operation: {ports: ["80a"], notPorts: ["22"]}}]}]}',
    want: [],
  },
  {
    name: 'of two to entries, the one that can never match is left out and the other kept',
    spec: '{rules: [{to: [{operation: {ports: ["x"]}}, {operation: {ports: ["9090"]}}]}]}',
    want: [[[{ destinationPorts: [9090] }]]],
  },
  {
    name: 'a when destination.port whose values are all invalid drops the ALLOW rule',
    spec: '{rules: [{when: [{key: destination.port, values: ["http"]}]}]}',
    want: [],
  },
  {
    name: 'a selector makes the scope WORKLOAD_SELECTOR',
    spec: '{selector: {matchLabels: {app: a}}, rules: [{}]}',
    want: [[]],
    scope: AuthzScope.WORKLOAD_SELECTOR,
  },
  { name: 'AUDIT is not sent', spec: '{action: AUDIT}', want: undefined, skipped: /does not support the AUDIT action/ },
  { name: 'CUSTOM is not sent', spec: '{action: CUSTOM, provider: {name: x}}', want: undefined, skipped: /CUSTOM/ },
  {
    name: 'targetRefs (waypoint policies) are not sent',
    spec: '{targetRefs: [{kind: Service, name: s}]}',
    want: undefined,
    skipped: /waypoint/,
  },
  {
    name: 'dry-run policies are not sent',
    spec: '{}',
    meta: ', annotations: {istio.io/dry-run: "true"}',
    want: undefined,
    skipped: /dry-run/,
  },
];

for (const c of cases) {
  test(`AuthorizationPolicy conversion: ${c.name}`, () => {
    const r = convert(c.spec, c.meta);
    assert.deepEqual(shape(r.policy), c.want);
    if (c.skipped !== undefined) assert.match(r.warnings.join('\n'), c.skipped);
    if (r.policy !== undefined) {
      assert.equal(r.policy.scope, c.scope ?? AuthzScope.NAMESPACE);
      assert.equal(r.policy.action, c.action ?? AuthzAction.ALLOW);
    }
  });
}

test('a policy in the root namespace without a selector is GLOBAL', () => {
  const { objects } = parseManifests(
    'ap.yaml',
    'apiVersion: security.istio.io/v1\nkind: AuthorizationPolicy\nmetadata: {name: g, namespace: istio-system}\nspec: {}\n',
  );
  assert.equal(convertAuthorizationPolicy(policy(objects[0]), 'istio-system').policy?.scope, AuthzScope.GLOBAL);
});
