import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pythonSkip, runPython } from './helpers/python.js';
import { startApiServer } from './helpers/in-process.js';
import type { ApiServer } from '../src/apiserver/api-server.js';

const skip = pythonSkip('kubernetes', 'python3-kubernetes');

describe("Debian's python3-kubernetes against amesh apiserver", { skip }, () => {
  let dir: string;
  let api: ApiServer;
  const scenario = async (name: string, ns: string): Promise<Record<string, unknown>> => {
    const r = await runPython('kube_client.py', [api.kubeconfigPath, name, ns], 60_000);
    assert.equal(r.status, 0, r.stderr);
    return JSON.parse(r.stdout) as Record<string, unknown>;
  };

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'amesh-pykube-'));
    api = await startApiServer(path.join(dir, 'data'));
  });
  after(async () => {
    await api.stop();
    await rm(dir, { recursive: true, force: true });
  });

  test('CRUD with optimistic concurrency, label selectors, and a watch stream from a resourceVersion', async () => {
    const r = await scenario('crud', 'py-crud');
    assert.ok(Number(r.replaced_rv) > Number(r.created_rv));
    assert.equal(r.stale_status, 409);
    assert.equal(r.stale_reason, 'Conflict');
    assert.deepEqual(r.listed, ['cfg']);
    assert.equal(r.listed_none, 0);
    assert.equal(r.after_delete, 404);
    assert.deepEqual(r.events, [
      ['MODIFIED', 'cfg', 'v2'],
      ['MODIFIED', 'cfg', 'v3'],
      ['DELETED', 'cfg', 'v3'],
    ]);
  });

  test('TokenRequest bound to a pod, and TokenReview: audience and bound-pod checks', async () => {
    const r = await scenario('tokens', 'py-tokens');
    assert.equal(r.token_parts, 3);
    assert.equal(r.authenticated, true);
    assert.equal(r.username, 'system:serviceaccount:py-tokens:app');
    assert.deepEqual((r.extra as Record<string, string[]>)['authentication.kubernetes.io/pod-name'], ['p']);
    assert.equal(r.wrong_audience, false);
    assert.equal(r.after_pod_deleted, false);
  });

  test('custom resources: schema errors as 422 Invalid with causes, Strict unknown fields as 400, pruning, a CRD Established', async () => {
    const r = await scenario('schemas', 'py-schemas');
    assert.deepEqual(r.invalid, {
      status: 422,
      reason: 'Invalid',
      message:
        'AuthorizationPolicy.security.istio.io "bad" is invalid: spec.action: Unsupported value: "DENYX": supported values: "ALLOW", "DENY", "AUDIT", "CUSTOM"',
      causes: [
        {
          reason: 'FieldValueNotSupported',
          message: 'Unsupported value: "DENYX": supported values: "ALLOW", "DENY", "AUDIT", "CUSTOM"',
          field: 'spec.action',
        },
      ],
    });
    assert.deepEqual(r.strict, {
      status: 400,
      reason: 'BadRequest',
      message:
        'AuthorizationPolicy in version "v1" cannot be handled as a AuthorizationPolicy: strict decoding error: unknown field "spec.foo"',
      causes: null,
    });
    assert.deepEqual(r.pruned_spec, { action: 'DENY' });
    assert.equal((r.patch as { status: number }).status, 422);
    assert.match((r.patch as { message: string }).message, /spec\.rules in body must be of type array: "string"/);
    assert.deepEqual(r.established, [
      ['NamesAccepted', 'True'],
      ['Established', 'True'],
    ]);
    assert.equal(r.accepted_kind, 'PeerAuthentication');
  });
});
