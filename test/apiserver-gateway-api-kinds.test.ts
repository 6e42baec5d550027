/**
 * The Gateway API's ReferenceGrant, TLSRoute and TCPRoute on the embedded API server, driven by kubectl with YAML as
 * upstream's docs write it: discovery, apply and read back (defaults filled), ReferenceGrant at both its versions,
 * schema refusals, the `gateway-api` category, watches and the routes' status subresource.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import type { ApiServer } from '../src/apiserver/api-server.js';
import { startApiServer } from './helpers/in-process.js';
import { kubectlSkip, kubectlWith } from './helpers/kubectl.js';

const GROUP = 'gateway.networking.k8s.io';

/** The three kinds as upstream's guides write them (ReferenceGrant at v1beta1, its storage version). */
const MANIFESTS = `
apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata:
  name: allow-infra-gateways
  namespace: shop
spec:
  from:
  - group: gateway.networking.k8s.io
    kind: Gateway
    namespace: infra
  to:
  - group: ""
    kind: Secret
    name: shop-cert
---
apiVersion: gateway.networking.k8s.io/v1
kind: TLSRoute
metadata:
  name: shop-tls
  namespace: shop
spec:
  parentRefs:
  - name: edge
    namespace: infra
    sectionName: tls-passthrough
  hostnames:
  - shop.example.com
  rules:
  - backendRefs:
    - name: shop
      port: 443
---
apiVersion: gateway.networking.k8s.io/v1
kind: TCPRoute
metadata:
  name: shop-db
  namespace: shop
spec:
  parentRefs:
  - name: edge
    namespace: infra
    sectionName: postgres
  rules:
  - backendRefs:
    - name: db
      port: 5432
`;

interface Obj {
  apiVersion: string;
  kind: string;
  metadata: { name: string; uid: string; generation?: number; resourceVersion: string };
  spec: Record<string, unknown>;
  status?: Record<string, unknown>;
}

describe('Gateway API ReferenceGrant, TLSRoute and TCPRoute', { skip: kubectlSkip }, () => {
  let dir: string;
  let api: ApiServer;
  const { kubectl, ok } = kubectlWith(() => api.kubeconfigPath);
  const file = async (name: string, text: string): Promise<string> => {
    const f = path.join(dir, name);
    await writeFile(f, text);
    return f;
  };
  const getJson = async <T>(...args: string[]): Promise<T> => JSON.parse(await ok('get', ...args, '-o', 'json')) as T;

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'amesh-gwapi-kinds-'));
    api = await startApiServer(path.join(dir, 'api'));
    for (const ns of ['shop', 'infra', 'refused', 'watched']) await ok('create', 'namespace', ns);
  });
  after(async () => {
    await api?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  test('discovery: kubectl api-resources lists them with short name and category; v1beta1 serves ReferenceGrant', async () => {
    const rows = (await ok('api-resources', `--api-group=${GROUP}`, '-o', 'wide'))
      .split('\n')
      .map((l) => l.trim().split(/\s+/));
    const row = (name: string): string[] | undefined => rows.find((r) => r[0] === name);
    assert.deepEqual(row('referencegrants')?.slice(0, 5), [
      'referencegrants',
      'refgrant',
      `${GROUP}/v1`,
      'true',
      'ReferenceGrant',
    ]);
    for (const [name, kind] of [
      ['tlsroutes', 'TLSRoute'],
      ['tcproutes', 'TCPRoute'],
    ] as const)
      assert.deepEqual(row(name)?.slice(0, 4), [name, `${GROUP}/v1`, 'true', kind]);
    const resources = async (version: string): Promise<string[]> =>
      (
        JSON.parse(await ok('get', '--raw', `/apis/${GROUP}/${version}`)) as { resources: { name: string }[] }
      ).resources.map((r) => r.name);
    const v1 = await resources('v1');
    for (const name of ['tlsroutes', 'tlsroutes/status', 'tcproutes', 'tcproutes/status', 'referencegrants'])
      assert.ok(v1.includes(name), name);
    assert.ok(!v1.includes('referencegrants/status'));
    const v1beta1 = await resources('v1beta1');
    assert.ok(v1beta1.includes('referencegrants'));
    assert.ok(!v1beta1.includes('tlsroutes') && !v1beta1.includes('tcproutes'));
    const missing = await kubectl('get', '--raw', `/apis/${GROUP}/v1alpha2/namespaces/shop/tcproutes`);
    assert.notEqual(missing.status, 0);
  });

  test('kubectl apply of upstream-style YAML creates them, read back with the schema defaults; applied again, nothing changes', async () => {
    const f = await file('kinds.yaml', MANIFESTS);
    assert.match(await ok('apply', '-f', f), /referencegrant.gateway.networking.k8s.io\/allow-infra-gateways created/);
    // Applied again: the ReferenceGrant is unchanged; the routes' merge patches restate their defaulted lists (as on
    // any cluster: kubectl's three-way JSON merge patch replaces a list that differs) and change nothing.
    assert.match(
      await ok('apply', '-f', f),
      /referencegrant.gateway.networking.k8s.io\/allow-infra-gateways unchanged/,
    );
    const tls = await getJson<Obj>('tlsroute', '-n', 'shop', 'shop-tls');
    assert.equal(tls.apiVersion, `${GROUP}/v1`);
    assert.equal(tls.metadata.generation, 1);
    assert.deepEqual(tls.spec, {
      parentRefs: [{ name: 'edge', namespace: 'infra', sectionName: 'tls-passthrough', group: GROUP, kind: 'Gateway' }],
      hostnames: ['shop.example.com'],
      rules: [{ backendRefs: [{ name: 'shop', port: 443, group: '', kind: 'Service', weight: 1 }] }],
    });
    const tcp = await getJson<Obj>('tcproutes', '-n', 'shop', 'shop-db');
    assert.deepEqual(tcp.spec.rules, [
      { backendRefs: [{ name: 'db', port: 5432, group: '', kind: 'Service', weight: 1 }] },
    ]);
    // ReferenceGrant: the short name, and both versions read the one object with their own apiVersion.
    const [beta, ga] = await Promise.all([
      getJson<Obj>(`referencegrants.v1beta1.${GROUP}`, '-n', 'shop', 'allow-infra-gateways'),
      getJson<Obj>(`referencegrants.v1.${GROUP}`, '-n', 'shop', 'allow-infra-gateways'),
    ]);
    assert.deepEqual([beta.apiVersion, ga.apiVersion], [`${GROUP}/v1beta1`, `${GROUP}/v1`]);
    assert.equal(beta.metadata.uid, ga.metadata.uid);
    assert.deepEqual(ga.spec, {
      from: [{ group: GROUP, kind: 'Gateway', namespace: 'infra' }],
      to: [{ group: '', kind: 'Secret', name: 'shop-cert' }],
    });
    assert.equal(
      (await ok('get', 'refgrant', '-n', 'shop', '-o', 'name')).trim(),
      `referencegrant.${GROUP}/allow-infra-gateways`,
    );
    // The gateway-api category takes in all three.
    assert.deepEqual((await ok('get', 'gateway-api', '-n', 'shop', '-o', 'name')).trim().split('\n').sort(), [
      `referencegrant.${GROUP}/allow-infra-gateways`,
      `tcproute.${GROUP}/shop-db`,
      `tlsroute.${GROUP}/shop-tls`,
    ]);
  });

  test('objects the schemas refuse get a 422 naming each field, and nothing is stored', async () => {
    const f = await file(
      'bad.yaml',
      `apiVersion: gateway.networking.k8s.io/v1
kind: TLSRoute
metadata: {name: no-hostnames, namespace: refused}
spec:
  rules: [{backendRefs: []}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: TCPRoute
metadata: {name: two-rules, namespace: refused}
spec:
  rules:
  - backendRefs: [{name: a, port: 1}]
  - backendRefs: [{name: b, port: 70000}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: ReferenceGrant
metadata: {name: no-namespace, namespace: refused}
spec:
  from: [{group: gateway.networking.k8s.io, kind: HTTPRoute}]
  to: []
`,
    );
    const r = await kubectl('apply', '-f', f);
    assert.notEqual(r.status, 0);
    for (const line of [
      'TLSRoute.gateway.networking.k8s.io "no-hostnames" is invalid: [spec.hostnames: Required value, spec.rules[0].backendRefs: Invalid value: 0: spec.rules[0].backendRefs in body should have at least 1 items]',
      'TCPRoute.gateway.networking.k8s.io "two-rules" is invalid: [spec.rules: Too many: 2: must have at most 1 items, spec.rules[1].backendRefs[0].port: Invalid value: 70000: spec.rules[1].backendRefs[0].port in body should be less than or equal to 65535]',
      'ReferenceGrant.gateway.networking.k8s.io "no-namespace" is invalid: [spec.from[0].namespace: Required value, spec.to: Invalid value: 0: spec.to in body should have at least 1 items]',
    ])
      assert.ok(r.stderr.includes(`Error from server (Invalid): error when creating "${f}": ${line}`), r.stderr);
    assert.equal((await ok('get', 'gateway-api', '-n', 'refused', '-o', 'name')).trim(), '');
    // An unknown field is refused under kubectl's default strict validation, at the version it was sent at.
    const unknown = await kubectl(
      'apply',
      '-f',
      await file(
        'unknown.yaml',
        'apiVersion: gateway.networking.k8s.io/v1\nkind: ReferenceGrant\nmetadata: {name: g, namespace: refused}\n' +
          'spec: {from: [{group: "", kind: Service, namespace: a}], to: [{group: "", kind: Service}], extra: 1}\n',
      ),
    );
    assert.match(
      unknown.stderr,
      /ReferenceGrant in version "v1" cannot be handled as a ReferenceGrant: strict decoding error: unknown field "spec.extra"/,
    );
  });

  test("a watch sees routes come and their status written through the subresource, the spec's generation kept", async () => {
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(api.kubeconfigPath);
    const events: { type: string; obj: Obj }[] = [];
    let wake: () => void = () => {};
    let request: { abort(): void } | undefined;
    /** Resolves with the first event (in order) that `match` takes, from those seen so far or to come. */
    const next = async (match: (type: string, o: Obj) => boolean): Promise<Obj> => {
      for (;;) {
        const i = events.findIndex((e) => match(e.type, e.obj));
        if (i >= 0) return events.splice(0, i + 1)[i]!.obj;
        await new Promise<void>((r) => (wake = r));
      }
    };
    try {
      request = await new k8s.Watch(kc).watch(
        `/apis/${GROUP}/v1/namespaces/watched/tlsroutes`,
        {},
        (type: string, obj: Obj) => {
          events.push({ type, obj });
          wake();
        },
        () => {},
      );
      await ok(
        'apply',
        '-f',
        await file('watched.yaml', MANIFESTS.replaceAll('namespace: shop', 'namespace: watched')),
      );
      const added = await next((t, o) => t === 'ADDED' && o.metadata.name === 'shop-tls');
      assert.equal(added.status, undefined);
      const status = {
        parents: [
          {
            parentRef: { name: 'edge', namespace: 'infra' },
            controllerName: 'istio.io/gateway-controller',
            conditions: [
              {
                type: 'Accepted',
                status: 'True',
                reason: 'Accepted',
                message: '',
                lastTransitionTime: '2026-01-01T00:00:00Z',
              },
            ],
          },
        ],
      };
      await ok(
        'patch',
        'tlsroute',
        '-n',
        'watched',
        'shop-tls',
        '--subresource=status',
        '--type=merge',
        '-p',
        JSON.stringify({ status, spec: { hostnames: ['ignored.example.com'] } }),
      );
      const modified = await next((t) => t === 'MODIFIED');
      assert.deepEqual(modified.status, status);
      assert.deepEqual(modified.spec.hostnames, ['shop.example.com']);
      assert.equal(modified.metadata.generation, 1);
      await ok('delete', 'tlsroute', '-n', 'watched', 'shop-tls');
      await next((t, o) => t === 'DELETED' && o.metadata.name === 'shop-tls');
    } finally {
      request?.abort();
    }
  });

  test('a CRD naming one of them, as upstream ships it, is Established and the built-in kind keeps serving it', async () => {
    const crd = {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: `tcproutes.${GROUP}` },
      spec: {
        group: GROUP,
        names: {
          kind: 'TCPRoute',
          listKind: 'TCPRouteList',
          plural: 'tcproutes',
          singular: 'tcproute',
          categories: ['gateway-api'],
        },
        scope: 'Namespaced',
        versions: [
          {
            name: 'v1',
            served: true,
            storage: true,
            schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
            subresources: { status: {} },
          },
        ],
      },
    };
    await ok('create', '-f', await file('crd.json', JSON.stringify(crd)));
    await ok('wait', '--for=condition=established', `crd/tcproutes.${GROUP}`, '--timeout=30s');
    const r = await kubectl(
      'create',
      '-f',
      await file(
        'tcp-bad.yaml',
        'apiVersion: gateway.networking.k8s.io/v1\nkind: TCPRoute\nmetadata: {name: no-rules, namespace: refused}\nspec: {}\n',
      ),
    );
    assert.match(r.stderr, /TCPRoute "no-rules" is invalid: spec.rules: Required value/);
    assert.equal((await ok('get', 'tcproutes', '-n', 'shop', '-o', 'name')).trim(), `tcproute.${GROUP}/shop-db`);
  });
});
