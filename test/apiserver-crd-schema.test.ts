import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { stringify } from 'yaml';
import { kubectlSkip, kubectlWith } from './helpers/kubectl.js';
import { startApiServer } from './helpers/in-process.js';
import type { ApiServer } from '../src/apiserver/api-server.js';
import { istioCustomResourceDefinitions } from '../src/apiserver/schema/custom-resource-definitions.js';

const policy = (name: string, spec: object): string =>
  stringify({
    apiVersion: 'security.istio.io/v1',
    kind: 'AuthorizationPolicy',
    metadata: { name, namespace: 'default' },
    spec,
  });

describe("kubectl 1.32 against the CRD schemas of Istio's kinds", { skip: kubectlSkip }, () => {
  let dir: string;
  let api: ApiServer;
  const { kubectl, ok } = kubectlWith(() => api.kubeconfigPath);
  const file = async (name: string, text: string): Promise<string> => {
    const p = path.join(dir, name);
    await writeFile(p, text);
    return p;
  };

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'amesh-crd-schema-'));
    api = await startApiServer(path.join(dir, 'data'));
  });
  after(async () => {
    await api.stop();
    await rm(dir, { recursive: true, force: true });
  });

  test('apply of an AuthorizationPolicy the schema refuses prints each field error, and nothing is stored', async () => {
    const r = await kubectl('apply', '-f', await file('bad.yaml', policy('bad', { action: 'DENYX', rules: 'x' })));
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /The AuthorizationPolicy "bad" is invalid/);
    assert.match(
      r.stderr,
      /spec\.action: Unsupported value: "DENYX": supported values: "ALLOW", "DENY", "AUDIT", "CUSTOM"/,
    );
    assert.match(r.stderr, /spec\.rules: Invalid value: "string": spec\.rules in body must be of type array: "string"/);
    assert.match((await kubectl('get', 'ap', 'bad')).stderr, /NotFound|not found/);
  });

  test("an unknown field is refused under kubectl's default strict validation, a warning under --validate=warn, and pruned", async () => {
    const p = await file(
      'unknown.yaml',
      policy('extra', { action: 'DENY', foo: 1, rules: [{ to: [{ operation: { bar: 2 } }] }] }),
    );
    const strict = await kubectl('apply', '-f', p);
    assert.notEqual(strict.status, 0);
    assert.match(
      strict.stderr,
      /AuthorizationPolicy in version "v1" cannot be handled as a AuthorizationPolicy: strict decoding error: unknown field "spec\.foo", unknown field "spec\.rules\[0\]\.to\[0\]\.operation\.bar"/,
    );
    const warn = await kubectl('apply', '-f', p, '--validate=warn');
    assert.equal(warn.status, 0, warn.stderr);
    assert.match(warn.stderr, /Warning: unknown field "spec\.foo"/);
    const stored = JSON.parse(await ok('get', 'ap', 'extra', '-o', 'json')) as { spec: unknown };
    assert.deepEqual(stored.spec, { action: 'DENY', rules: [{ to: [{ operation: {} }] }] });
    const other = policy('ignored', { action: 'DENY', foo: 1 });
    const ignored = await kubectl('apply', '-f', await file('ignored.yaml', other), '--validate=false');
    assert.equal(ignored.status, 0, ignored.stderr);
    assert.doesNotMatch(ignored.stderr, /Warning/);
  });

  test('a patch that breaks the schema is refused; a changed apply of a custom resource goes through as a merge patch', async () => {
    await ok('apply', '-f', await file('good.yaml', policy('good', { action: 'ALLOW' })));
    const r = await kubectl('patch', 'ap', 'good', '--type', 'merge', '-p', '{"spec":{"action":"DENYX"}}');
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /The AuthorizationPolicy "good" is invalid: spec\.action: Unsupported value: "DENYX"/);
    assert.match(await ok('apply', '-f', await file('good.yaml', policy('good', { action: 'DENY' }))), /configured/);
    assert.match(await ok('get', 'ap', 'good'), /good\s+DENY/);
  });

  test("kubectl explain prints a custom kind's fields with their types, enums and descriptions", async () => {
    const action = await ok('explain', 'authorizationpolicies.spec.action');
    assert.match(action, /KIND:\s+AuthorizationPolicy/);
    assert.match(action, /FIELD: action <string>/);
    assert.match(action, /ENUM:\s+ALLOW\s+DENY\s+AUDIT\s+CUSTOM/);
    assert.match(action, /Valid Options: ALLOW, DENY, AUDIT, CUSTOM/);
    const source = await ok('explain', 'ap.spec.rules.from.source');
    assert.match(source, /serviceAccounts\s+<\[\]string>/);
    assert.match(await ok('explain', 'virtualservices.spec.http.timeout'), /FIELD: timeout <string>/);
  });

  test("Istio's CRDs apply (server dry run first) and are Established for kubectl wait; a kind not built in is then served", async () => {
    const crds = await file(
      'crds.yaml',
      istioCustomResourceDefinitions()
        .map((c) => stringify(c))
        .join('---\n'),
    );
    assert.match(
      await ok('apply', '--dry-run=server', '-f', crds),
      /envoyfilters\.networking\.istio\.io created \(server dry run\)/,
    );
    const applied = await ok('apply', '-f', crds);
    assert.equal(applied.match(/ created$/gm)?.length, 15);
    for (const name of ['authorizationpolicies.security.istio.io', 'envoyfilters.networking.istio.io'])
      assert.match(await ok('wait', '--for', 'condition=established', `crd/${name}`, '--timeout=10s'), /condition met/);
    const ef = JSON.parse(await ok('get', 'crd', 'envoyfilters.networking.istio.io', '-o', 'json')) as {
      status: { conditions: { type: string; status: string }[]; acceptedNames: { kind: string } };
    };
    assert.deepEqual(
      ef.status.conditions.map((c) => [c.type, c.status]),
      [
        ['NamesAccepted', 'True'],
        ['Established', 'True'],
      ],
    );
    assert.equal(ef.status.acceptedNames.kind, 'EnvoyFilter');
    assert.match(await ok('apply', '-f', crds), /authorizationpolicies\.security\.istio\.io unchanged/);

    const filter = (patch: object): string =>
      stringify({
        apiVersion: 'networking.istio.io/v1alpha3',
        kind: 'EnvoyFilter',
        metadata: { name: 'ef', namespace: 'default' },
        spec: { configPatches: [{ applyTo: 'HTTP_FILTER', patch }] },
      });
    const bad = await kubectl('apply', '-f', await file('ef-bad.yaml', filter({ operation: 'SMASH' })));
    assert.match(bad.stderr, /spec\.configPatches\[0\]\.patch\.operation: Unsupported value: "SMASH"/);
    assert.match(
      await ok('apply', '-f', await file('ef.yaml', filter({ operation: 'MERGE' }))),
      /envoyfilter\.networking\.istio\.io\/ef created/,
    );
    assert.match(await ok('get', 'envoyfilters'), /^ef\s/m);
    assert.match(await ok('explain', 'envoyfilters.spec.configPatches.applyTo'), /ENUM:/);
  });

  test('a CRD of your own is served from its schema, and deleting it deletes its objects', async () => {
    const crd = {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: 'widgets.example.com' },
      spec: {
        group: 'example.com',
        scope: 'Namespaced',
        names: { plural: 'widgets', kind: 'Widget', shortNames: ['wd'] },
        versions: [
          {
            name: 'v1',
            served: true,
            storage: true,
            subresources: { status: {} },
            schema: {
              openAPIV3Schema: {
                type: 'object',
                properties: {
                  spec: {
                    type: 'object',
                    required: ['size'],
                    properties: { size: { type: 'integer', minimum: 1 }, color: { type: 'string', default: 'blue' } },
                  },
                },
              },
            },
          },
        ],
      },
    };
    await ok('apply', '-f', await file('widget-crd.yaml', stringify(crd)));
    await ok('wait', '--for', 'condition=established', 'crd/widgets.example.com', '--timeout=10s');
    const widget = (spec: object): string =>
      stringify({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w', namespace: 'default' }, spec });
    const bad = await kubectl('apply', '-f', await file('w-bad.yaml', widget({ size: 0 })));
    assert.match(bad.stderr, /spec\.size: Invalid value: 0: spec\.size in body should be greater than or equal to 1/);
    await ok('apply', '-f', await file('w.yaml', widget({ size: 3 })));
    const stored = JSON.parse(await ok('get', 'wd', 'w', '-o', 'json')) as { spec: unknown };
    assert.deepEqual(stored.spec, { size: 3, color: 'blue' });
    await ok('delete', 'crd', 'widgets.example.com');
    await ok('apply', '-f', path.join(dir, 'widget-crd.yaml'));
    await ok('wait', '--for', 'condition=established', 'crd/widgets.example.com', '--timeout=10s');
    assert.equal(await ok('get', 'widgets', '-A', '-o', 'name'), '');
  });
});
