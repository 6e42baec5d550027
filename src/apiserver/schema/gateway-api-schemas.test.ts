import { test } from 'node:test';
import assert from 'node:assert/strict';
import { customResourceSchema, customResourceSource } from './custom-resource-schemas.js';
import { applyDefaults, pruneUnknownFields, validateAgainstSchema } from './schema-validator.js';

const GRPC = customResourceSchema('gateway.networking.k8s.io/v1', 'GRPCRoute')!;

function grpcRoute(spec: unknown): Record<string, unknown> {
  return { apiVersion: 'gateway.networking.k8s.io/v1', kind: 'GRPCRoute', metadata: { name: 'r' }, spec };
}

function errors(obj: Record<string, unknown>): string[] {
  return validateAgainstSchema(obj, GRPC).map((c) => `${c.reason} ${c.field ?? ''}: ${c.message}`);
}

test("GRPCRoute is served at v1 alone, as the standard channel's CRD serves it, with its Hostnames and Age columns", () => {
  const source = customResourceSource('gateway.networking.k8s.io', 'GRPCRoute');
  assert.ok(source !== undefined);
  assert.deepEqual(source.versions, [{ name: 'v1', served: true, storage: true }]);
  assert.deepEqual(
    [source.plural, source.singular, source.listKind, source.categories],
    ['grpcroutes', 'grpcroute', 'GRPCRouteList', ['gateway-api']],
  );
  assert.deepEqual(
    source.printerColumns.map((c) => [c.name, c.jsonPath]),
    [
      ['Hostnames', '.spec.hostnames'],
      ['Age', '.metadata.creationTimestamp'],
    ],
  );
  assert.equal(customResourceSchema('gateway.networking.k8s.io/v1alpha2', 'GRPCRoute'), undefined);
});

test("a GRPCRoute's defaults: parentRef a Gateway, backendRef a Service of weight 1, matches Exact; no default rule or match", () => {
  const obj = grpcRoute({
    parentRefs: [{ name: 'echo', group: '', kind: 'Service' }, { name: 'gw' }],
    rules: [
      {
        matches: [{ method: { service: 'echo.Echo' }, headers: [{ name: 'x', value: 'y' }] }],
        backendRefs: [{ name: 'echo', port: 50051 }],
      },
      { backendRefs: [{ name: 'echo', port: 50051 }] },
    ],
  });
  assert.deepEqual(errors(obj), []);
  applyDefaults(obj, GRPC);
  assert.deepEqual(obj.spec, {
    parentRefs: [
      { name: 'echo', group: '', kind: 'Service' },
      { name: 'gw', group: 'gateway.networking.k8s.io', kind: 'Gateway' },
    ],
    rules: [
      {
        matches: [
          { method: { service: 'echo.Echo', type: 'Exact' }, headers: [{ name: 'x', value: 'y', type: 'Exact' }] },
        ],
        backendRefs: [{ name: 'echo', port: 50051, group: '', kind: 'Service', weight: 1 }],
      },
      { backendRefs: [{ name: 'echo', port: 50051, group: '', kind: 'Service', weight: 1 }] },
    ],
  });
  const empty = grpcRoute({});
  applyDefaults(empty, GRPC);
  assert.deepEqual(empty.spec, {});
});

test("a GRPCRoute is checked against its CRD's schema: hostnames, match and filter types, required fields, ranges", () => {
  assert.deepEqual(
    errors(
      grpcRoute({
        hostnames: ['Not_A_Host'],
        rules: [
          {
            matches: [{ method: { type: 'Prefix', service: 'a' }, headers: [{ name: 'x' }] }],
            filters: [{ type: 'URLRewrite' }],
            backendRefs: [{ name: 'echo', port: 70000, weight: -1 }],
          },
        ],
      }),
    ),
    [
      `FieldValueInvalid spec.hostnames[0]: Invalid value: "Not_A_Host": spec.hostnames[0] in body should match '^(\\*\\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$'`,
      'FieldValueNotSupported spec.rules[0].matches[0].method.type: Unsupported value: "Prefix": supported values: "Exact", "RegularExpression"',
      'FieldValueRequired spec.rules[0].matches[0].headers[0].value: Required value',
      'FieldValueNotSupported spec.rules[0].filters[0].type: Unsupported value: "URLRewrite": supported values: "ResponseHeaderModifier", "RequestHeaderModifier", "RequestMirror", "ExtensionRef"',
      'FieldValueInvalid spec.rules[0].backendRefs[0].port: Invalid value: 70000: spec.rules[0].backendRefs[0].port in body should be less than or equal to 65535',
      'FieldValueInvalid spec.rules[0].backendRefs[0].weight: Invalid value: -1: spec.rules[0].backendRefs[0].weight in body should be greater than or equal to 0',
    ],
  );
  assert.deepEqual(
    errors(
      grpcRoute({
        rules: Array.from({ length: 17 }, () => ({ matches: [{ method: { service: 'x'.repeat(1025) } }] })),
      }),
    ).filter((e) => !e.includes('].matches[0]') || e.includes('rules[0]')),
    [
      'FieldValueTooMany spec.rules: Too many: 17: must have at most 16 items',
      'FieldValueTooLong spec.rules[0].matches[0].method.service: Too long: must have at most 1024 bytes',
    ],
  );
});

test('GRPCRoute pruning keeps what the schema declares and drops the rest', () => {
  const obj = grpcRoute({
    rules: [{ matches: [{ method: { service: 's', extra: 1 }, path: { value: '/' } }], timeouts: { request: '1s' } }],
  });
  assert.deepEqual(pruneUnknownFields(obj, GRPC), [
    'spec.rules[0].matches[0].method.extra',
    'spec.rules[0].matches[0].path',
    'spec.rules[0].timeouts',
  ]);
  assert.deepEqual(obj.spec, { rules: [{ matches: [{ method: { service: 's' } }] }] });
});

const TLS = customResourceSchema('gateway.networking.k8s.io/v1', 'TLSRoute')!;
const TCP = customResourceSchema('gateway.networking.k8s.io/v1', 'TCPRoute')!;
const GRANT = customResourceSchema('gateway.networking.k8s.io/v1beta1', 'ReferenceGrant')!;
const problems = (obj: Record<string, unknown>, schema: typeof TLS): string[] =>
  validateAgainstSchema(obj, schema).map((c) => `${c.field ?? ''}: ${c.message}`);
const object = (apiVersion: string, kind: string, spec: unknown): Record<string, unknown> => ({
  apiVersion,
  kind,
  metadata: { name: 'x', namespace: 'ns' },
  spec,
});

test("TLSRoute and TCPRoute are served at v1 alone (the standard channel's), ReferenceGrant at v1beta1 (stored) and v1", () => {
  const versions = (kind: string): unknown =>
    customResourceSource('gateway.networking.k8s.io', kind)
      ?.versions.filter((v) => v.served)
      .map((v) => [v.name, v.storage]);
  assert.deepEqual(versions('TLSRoute'), [['v1', true]]);
  assert.deepEqual(versions('TCPRoute'), [['v1', true]]);
  assert.deepEqual(versions('ReferenceGrant'), [
    ['v1', false],
    ['v1beta1', true],
  ]);
  for (const v of ['v1alpha2', 'v1alpha3'])
    assert.equal(customResourceSchema(`gateway.networking.k8s.io/${v}`, 'TLSRoute'), undefined);
  assert.equal(customResourceSchema('gateway.networking.k8s.io/v1alpha2', 'TCPRoute'), undefined);
  assert.equal(customResourceSchema('gateway.networking.k8s.io/v1', 'ReferenceGrant'), GRANT);
  const grant = customResourceSource('gateway.networking.k8s.io', 'ReferenceGrant')!;
  assert.deepEqual(
    [grant.shortNames, grant.categories, grant.listKind],
    [['refgrant'], ['gateway-api'], 'ReferenceGrantList'],
  );
  assert.equal(grant.schema.properties?.status, undefined);
  for (const kind of ['TLSRoute', 'TCPRoute', 'ReferenceGrant'])
    assert.deepEqual(
      customResourceSource('gateway.networking.k8s.io', kind)?.printerColumns.map((c) => c.name),
      ['Age'],
      kind,
    );
});

test('an L4 route defaults its parents to Gateways and its backends to Services of weight 1', () => {
  const route = object('gateway.networking.k8s.io/v1', 'TLSRoute', {
    parentRefs: [{ name: 'gw', sectionName: 'tls' }],
    hostnames: ['*.example.com'],
    rules: [{ backendRefs: [{ name: 'shop', port: 443 }] }],
  });
  assert.deepEqual(problems(route, TLS), []);
  applyDefaults(route, TLS);
  assert.deepEqual(route.spec, {
    parentRefs: [{ name: 'gw', sectionName: 'tls', group: 'gateway.networking.k8s.io', kind: 'Gateway' }],
    hostnames: ['*.example.com'],
    rules: [{ backendRefs: [{ name: 'shop', port: 443, group: '', kind: 'Service', weight: 1 }] }],
  });
});

test('TLSRoute needs hostnames and exactly one rule with a backend; TCPRoute one rule and no hostnames', () => {
  assert.deepEqual(
    problems(object('gateway.networking.k8s.io/v1', 'TLSRoute', { rules: [{ backendRefs: [] }] }), TLS),
    [
      'spec.hostnames: Required value',
      'spec.rules[0].backendRefs: Invalid value: 0: spec.rules[0].backendRefs in body should have at least 1 items',
    ],
  );
  const twoRules = {
    rules: [{ backendRefs: [{ name: 'a', port: 1 }] }, { backendRefs: [{ name: 'b', port: 70000 }] }],
  };
  assert.deepEqual(problems(object('gateway.networking.k8s.io/v1', 'TCPRoute', twoRules), TCP), [
    'spec.rules: Too many: 2: must have at most 1 items',
    'spec.rules[1].backendRefs[0].port: Invalid value: 70000: spec.rules[1].backendRefs[0].port in body should be less than or equal to 65535',
  ]);
  assert.deepEqual(problems(object('gateway.networking.k8s.io/v1', 'TCPRoute', {}), TCP), [
    'spec.rules: Required value',
  ]);
  const tcp = object('gateway.networking.k8s.io/v1', 'TCPRoute', {
    hostnames: ['db.example.com'],
    rules: [{ backendRefs: [{ name: 'db', port: 5432 }] }],
  });
  assert.deepEqual(pruneUnknownFields(tcp, TCP), ['spec.hostnames']);
});

test('a ReferenceGrant names kinds by group from namespaces, to kinds (one by name, or all) in its own', () => {
  const grant = (spec: unknown): Record<string, unknown> =>
    object('gateway.networking.k8s.io/v1beta1', 'ReferenceGrant', spec);
  assert.deepEqual(
    problems(
      grant({
        from: [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', namespace: 'shop' }],
        to: [
          { group: '', kind: 'Service' },
          { group: '', kind: 'Secret', name: 'cert' },
        ],
      }),
      GRANT,
    ),
    [],
  );
  assert.deepEqual(problems(grant({ from: [{ group: 'Not A Group', kind: 'HTTPRoute' }], to: [] }), GRANT), [
    'spec.from[0].namespace: Required value',
    `spec.from[0].group: Invalid value: "Not A Group": spec.from[0].group in body should match '^$|^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$'`,
    'spec.to: Invalid value: 0: spec.to in body should have at least 1 items',
  ]);
  assert.deepEqual(problems({ ...grant(undefined), spec: undefined }, GRANT), ['spec: Required value']);
});
