import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isRecord } from '../../lib/record.js';
import { parseManifests } from './manifest-dir.js';
import {
  documentSchema,
  kindSchema,
  type Infer,
  type MtlsMode,
  type OwnerReference,
  type PolicyCondition,
  type Schema,
} from './manifest-schema.js';

const AP = 'apiVersion: security.istio.io/v1\nkind: AuthorizationPolicy\nmetadata: {name: p, namespace: shop}\nspec:\n';
const POD = 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: web-0\n  namespace: shop\n';

/** Each document is refused, as the Kubernetes API server would refuse it, with the line of the offending node. */
const refused: { name: string; yaml: string; line: number; why: RegExp }[] = [
  {
    name: 'AuthorizationPolicy rules given as a string',
    yaml: `${AP}  action: DENY\n  rules: "deny everything"\n`,
    line: 6,
    why: /spec\.rules: expected a list/,
  },
  {
    name: 'AuthorizationPolicy principals given as a number',
    yaml: `${AP}  action: DENY\n  rules:\n  - from:\n    - source:\n        principals: 5\n`,
    line: 9,
    why: /principals: expected a list/,
  },
  {
    name: 'a principal given as a number inside the list',
    yaml: `${AP}  rules:\n  - from:\n    - source: {principals: [5]}\n`,
    line: 7,
    why: /principals\[0\]: expected a string, got 5 \(quote it\)/,
  },
  {
    name: 'selector.matchLabels given as a list (never widened to the namespace)',
    yaml: `${AP}  selector:\n    matchLabels: [app, web]\n`,
    line: 6,
    why: /spec\.selector\.matchLabels: expected a mapping, got a list/,
  },
  {
    name: 'a selector label value that YAML reads as a number',
    yaml: `${AP}  selector:\n    matchLabels: {version: 2}\n`,
    line: 6,
    why: /matchLabels\.version: expected a string, got 2 \(quote it\)/,
  },
  {
    name: 'a pod label value that YAML reads as a number',
    yaml: `${POD}  labels:\n    app: web\n    version: 2\n`,
    line: 8,
    why: /metadata\.labels\.version: expected a string, got 2/,
  },
  {
    name: 'a Service selector value that YAML reads as a boolean',
    yaml: 'apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: shop}\nspec:\n  selector: {canary: true}\n',
    line: 5,
    why: /spec\.selector\.canary: expected a string, got true/,
  },
  {
    name: 'an unknown AuthorizationPolicy action',
    yaml: `${AP}  action: DENNY\n`,
    line: 5,
    why: /expected one of ALLOW, DENY, AUDIT, CUSTOM, got "DENNY"/,
  },
  {
    name: 'an unknown field in a rule (typo)',
    yaml: `${AP}  rules:\n  - form: [{source: {principals: [x]}}]\n`,
    line: 6,
    why: /unknown field "form"/,
  },
  {
    name: 'a DENY whose only port is invalid (it would deny nothing)',
    yaml: `${AP}  action: DENY\n  rules:\n  - to:\n    - operation:\n        ports: ["80a"]\n`,
    line: 9,
    why: /ports: no valid value left .* would deny nothing/,
  },
  {
    name: 'a DENY whose only ipBlock is invalid',
    yaml: `${AP}  action: DENY\n  rules:\n  - from: [{source: {ipBlocks: ["10.0.0.0/33"]}}]\n`,
    line: 7,
    why: /ipBlocks: no valid value left/,
  },
  {
    name: 'a PeerAuthentication mode typo (never read as UNSET)',
    yaml: 'apiVersion: security.istio.io/v1\nkind: PeerAuthentication\nmetadata: {name: default, namespace: shop}\nspec:\n  mtls: {mode: STRIKT}\n',
    line: 5,
    why: /expected one of UNSET, DISABLE, PERMISSIVE, STRICT/,
  },
  {
    name: 'a name that is not DNS-1123',
    yaml: 'apiVersion: v1\nkind: Pod\nmetadata: {name: Web_0, namespace: shop}\n',
    line: 3,
    why: /metadata\.name: "Web_0" is not a DNS-1123 subdomain/,
  },
  {
    name: 'a Service name that is not a DNS-1123 label',
    yaml: 'apiVersion: v1\nkind: Service\nmetadata: {name: web.v1, namespace: shop}\n',
    line: 3,
    why: /"web\.v1" is not a DNS-1123 label/,
  },
  {
    name: 'a namespace that is not DNS-1123',
    yaml: 'apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: Shop}\n',
    line: 3,
    why: /metadata\.namespace: "Shop" is not a DNS-1123 label/,
  },
  {
    name: 'a label value that is not a valid label value',
    yaml: `${POD}  labels: {app: "web app"}\n`,
    line: 6,
    why: /label value "web app" is not valid/,
  },
  {
    name: 'a creationTimestamp that is not an RFC 3339 time',
    yaml: 'apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: shop, creationTimestamp: yesterday}\n',
    line: 3,
    why: /metadata\.creationTimestamp: "yesterday" is not an RFC 3339 time/,
  },
  {
    name: 'a Node label value that YAML reads as a number',
    yaml: 'apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n  labels: {topology.istio.io/subzone: 7}\n',
    line: 5,
    why: /metadata\.labels\.topology\.istio\.io\/subzone: expected a string, got 7/,
  },
  {
    name: 'a containerPort given as a string',
    yaml: `${POD}spec:\n  containers: [{name: c, ports: [{containerPort: "8080"}]}]\n`,
    line: 7,
    why: /containerPort: expected an integer/,
  },
];

for (const c of refused) {
  test(`manifest refused with file:line: ${c.name}`, () => {
    const r = parseManifests('m.yaml', c.yaml);
    assert.deepEqual(r.objects, []);
    assert.ok(r.errors.length > 0, 'an error');
    assert.ok(r.errors.every((e) => e.code === 'ISTIOD_ERR_MANIFEST'));
    assert.match(r.errors[0]!.message, new RegExp(`^m\\.yaml:${c.line}: `));
    assert.match(r.errors[0]!.message, c.why);
    assert.deepEqual(r.damaged, ['m.yaml']);
  });
}

/** Each document is in use, with a warning naming the value amesh ignores. */
const warned: { name: string; yaml: string; line: number; why: RegExp }[] = [
  {
    name: 'podIP 999.1.2.3',
    yaml: `${POD}status: {podIP: 999.1.2.3}\n`,
    line: 6,
    why: /status\.podIP: "999\.1\.2\.3" is not an IP address/,
  },
  {
    name: 'clusterIP not-an-ip',
    yaml: 'apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: shop}\nspec:\n  clusterIP: not-an-ip\n',
    line: 5,
    why: /spec\.clusterIP: "not-an-ip" is not an IP address/,
  },
  {
    name: 'Service port 99999',
    yaml: 'apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: shop}\nspec:\n  ports:\n  - port: 99999\n',
    line: 6,
    why: /spec\.ports\[0\]\.port: port 99999 is out of range/,
  },
  {
    name: 'an unknown kind',
    yaml: 'apiVersion: v1\nkind: Gizmo\nmetadata: {name: g, namespace: shop}\n',
    line: 1,
    why: /kind Gizmo is not used by amesh istiod; ignored/,
  },
  {
    name: 'an AuthorizationPolicy port Istio skips, next to a valid one',
    yaml: `${AP}  action: DENY\n  rules:\n  - to: [{operation: {ports: ["8080", "80a"]}}]\n`,
    line: 7,
    why: /ports\[1\]: "80a" is not a port; Istio skips it/,
  },
];

for (const c of warned) {
  test(`manifest accepted with a file:line warning: ${c.name}`, () => {
    const r = parseManifests('m.yaml', c.yaml);
    assert.deepEqual(r.errors, []);
    assert.equal(r.objects.length, 1);
    assert.match(r.warnings[0] ?? '', new RegExp(`^m\\.yaml:${c.line}: `));
    assert.match(r.warnings[0] ?? '', c.why);
  });
}

test('a creationTimestamp as the API server writes it (unquoted RFC 3339) is kept on the object', () => {
  const r = parseManifests(
    'm.yaml',
    'apiVersion: networking.istio.io/v1\nkind: ServiceEntry\nmetadata: {name: db, namespace: shop, creationTimestamp: 2024-05-01T10:00:00Z}\nspec: {hosts: [db.example.com]}\n',
  );
  assert.deepEqual(r.errors, []);
  assert.equal(r.objects[0]?.metadata.creationTimestamp, '2024-05-01T10:00:00Z');
});

test('a required field given as null is refused as missing, as the API server prunes a null field', () => {
  for (const [yaml, why] of [
    ['apiVersion: v1\nkind: Pod\nmetadata: {name: ~, namespace: shop}\n', /metadata\.name: is required/],
    ['apiVersion: ~\nkind: Pod\nmetadata: {name: web, namespace: shop}\n', /: apiVersion: is required/],
    [`${AP}  rules: [{when: [{key: ~, values: [a]}]}]\n`, /when\[0\]\.key: is required/],
  ] as const) {
    const r = parseManifests('m.yaml', yaml);
    assert.deepEqual(r.objects, []);
    assert.match(r.errors[0]?.message ?? '', why);
  }
});

test('an ownerReference without apiVersion, kind or name is refused, as the API server refuses it', () => {
  const r = parseManifests('m.yaml', `${POD}  ownerReferences: [{kind: ReplicaSet, controller: true}]\n`);
  assert.deepEqual(r.objects, []);
  const messages = r.errors.map((e) => e.message).join('\n');
  assert.match(messages, /metadata\.ownerReferences\[0\]\.apiVersion: is required/);
  assert.match(messages, /metadata\.ownerReferences\[0\]\.name: is required/);
});

test("a field named after an Object.prototype member is an unknown field, and such a kind one amesh doesn't read", () => {
  const field = parseManifests('m.yaml', `${AP}  constructor: x\n`);
  assert.match(field.errors[0]?.message ?? '', /unknown field "constructor"/);
  const kind = parseManifests('m.yaml', 'apiVersion: v1\nkind: toString\nmetadata: {name: t, namespace: shop}\n');
  assert.match(kind.warnings[0] ?? '', /kind toString is not used by amesh istiod/);
});

/** True only when `A` and `B` are the same type. */
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;

test('Infer reads the type off the schema: required fields present and not null, the others absent or null', () => {
  const s = {
    t: 'object',
    fields: {
      name: { t: 'string' },
      count: { t: 'int' },
      on: { t: 'bool' },
      port: { t: 'intOrString' },
      mode: { t: 'string', enum: ['A', 'B'] },
      tags: { t: 'list', of: { t: 'string' } },
      labels: { t: 'map', of: { t: 'string' } },
      extra: { t: 'any' },
    },
    required: ['name'],
  } as const satisfies Schema;
  interface Want {
    readonly name: string;
    readonly count?: number | null;
    readonly on?: boolean | null;
    readonly port?: number | string | null;
    readonly mode?: 'A' | 'B' | null;
    readonly tags?: readonly (string | null)[] | null;
    readonly labels?: Readonly<Record<string, string>> | null;
    readonly extra?: unknown;
  }
  // Checked by tsc (`npm run typecheck`): a `false` here does not compile.
  const same: [
    Equal<Infer<typeof s>, Want>,
    Equal<MtlsMode, 'UNSET' | 'DISABLE' | 'PERMISSIVE' | 'STRICT'>,
    Equal<PolicyCondition['key'], string>,
    Equal<OwnerReference['name'], string>,
  ] = [true, true, true, true];
  assert.ok(same.every(Boolean));
  assert.ok(conforms(s, { name: 'x', count: null, tags: ['a', null], labels: { a: 'b' } }));
  assert.ok(!conforms(s, { count: 1 }), 'name is required');
  assert.ok(!conforms(s, { name: 'x', labels: { a: null } }), 'a map value is never null');
});

/** `v` is a value of `Infer<s>`, checked at run time as the type reads (null only where it allows null). */
function conforms(s: Schema, v: unknown): boolean {
  switch (s.t) {
    case 'any':
      return true;
    case 'string':
      return typeof v === 'string' && (s.enum === undefined || s.enum.includes(v));
    case 'int':
      return Number.isInteger(v);
    case 'bool':
      return typeof v === 'boolean';
    case 'intOrString':
      return typeof v === 'string' || Number.isInteger(v);
    case 'list':
      return Array.isArray(v) && v.every((x) => x === null || conforms(s.of, x));
    case 'map':
      return isRecord(v) && Object.values(v).every((x) => conforms(s.of, x));
    case 'object':
      return (
        isRecord(v) &&
        (s.required ?? []).every((k) => v[k] !== undefined && v[k] !== null) &&
        Object.entries(s.fields).every(([k, f]) => v[k] === undefined || v[k] === null || conforms(f, v[k]))
      );
  }
}

/** Every kind with a schema, each optional field absent, present or null, and null list items. */
const TYPED = [
  `${POD}  labels: {app: web}\n  ownerReferences: [~, {apiVersion: apps/v1, kind: ReplicaSet, name: web-1, controller: ~}]\nspec:\n  nodeName: ~\n  containers: [~, {name: c, ports: [~, {name: http, containerPort: 8080}]}]\nstatus: {podIP: 10.1.0.5, podIPs: [~, {ip: ~}], conditions: [{type: Ready, status: "True"}]}\n`,
  'apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: shop}\nspec: {selector: {app: web}, clusterIPs: [~], ports: [~, {port: 80, targetPort: http}, {port: 81, targetPort: 8081}]}\n',
  'apiVersion: networking.istio.io/v1\nkind: ServiceEntry\nmetadata: {name: db, namespace: shop}\nspec: {hosts: [db.example.com, ~], resolution: DNS, workloadSelector: ~, endpoints: [~, {address: 10.0.0.1, ports: {tcp: 5432}, weight: ~}]}\n',
  'apiVersion: networking.istio.io/v1\nkind: WorkloadEntry\nmetadata: {name: vm, namespace: shop}\nspec: {address: vm.example.com, labels: {app: vm}, locality: ~}\n',
  `${AP}  action: DENY\n  targetRef: ~\n  rules: [~, {from: [~, {source: {principals: [~, a]}}], to: [{operation: {hosts: ~, ports: ["80"]}}], when: [~, {key: source.ip, values: [10.0.0.0/8]}]}]\n`,
  'apiVersion: security.istio.io/v1\nkind: PeerAuthentication\nmetadata: {name: p, namespace: shop}\nspec: {selector: ~, mtls: {mode: ~}, portLevelMtls: {"8080": {mode: STRICT}}}\n',
  'apiVersion: v1\nkind: Node\nmetadata: {name: n1, labels: {topology.kubernetes.io/zone: z1}}\nspec: {podCIDR: 10.1.0.0/24}\n',
  'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: shop}\ndata: {a: b}\n',
  'apiVersion: v1\nkind: Pod\nmetadata: {name: bare, namespace: shop}\nspec: ~\n',
  'apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {name: s, namespace: shop}\naddressType: IPv4\nendpoints: [~, {addresses: [10.0.0.1, ~], conditions: {ready: ~}, targetRef: {kind: Pod, name: p}}]\nports: ~\n',
];

test('every document the walker accepts is a value of the type Infer reads off its schema, spec and status too', () => {
  for (const yaml of TYPED) {
    const r = parseManifests('m.yaml', yaml);
    assert.deepEqual(r.errors, [], yaml);
    assert.equal(r.objects.length, 1, yaml);
    const o = r.objects[0]!;
    const kind = kindSchema(o.kind);
    assert.ok(conforms(documentSchema(kind), o.document), yaml);
    assert.ok(kind?.spec === undefined || conforms(kind.spec, o.spec), yaml);
    assert.ok(kind?.status === undefined || conforms(kind.status, o.status), yaml);
  }
});

test('an EndpointSlice keeps its fields at the top level, and the checked object holds them as its spec', () => {
  const ok = parseManifests(
    'm.yaml',
    'apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {name: s, namespace: shop}\naddressType: IPv4\nendpoints: [{addresses: [10.0.0.1]}]\nports: [{name: http, port: 80}]\n',
  );
  assert.deepEqual(ok.errors, []);
  assert.deepEqual(ok.objects[0]!.spec, {
    addressType: 'IPv4',
    endpoints: [{ addresses: ['10.0.0.1'] }],
    ports: [{ name: 'http', port: 80 }],
  });
  const bad = parseManifests(
    'm.yaml',
    'apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {name: s, namespace: shop}\naddressType: IPv5\nspec: {}\n',
  );
  assert.deepEqual(
    bad.errors.map((e) => e.message),
    [
      'm.yaml:4: EndpointSlice shop/s: addressType: expected one of IPv4, IPv6, FQDN, got "IPv5"',
      'm.yaml:5: EndpointSlice shop/s: spec: unknown field "spec" (expected one of: apiVersion, kind, metadata, status, data, stringData, binaryData, type, immutable, addressType, endpoints, ports)',
    ],
  );
});
