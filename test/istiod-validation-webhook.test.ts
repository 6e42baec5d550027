/**
 * istiod's validating webhook end to end: the API server calls it through the `istiod` Service's endpoints, istiod
 * fills in the configuration's caBundle and switches it to failurePolicy Fail once its own webhook has refused a
 * probe, kubectl's applies of AuthorizationPolicies that istiod could not honour are refused with Istio's message
 * and never stored, and with istiod gone the apply is refused rather than let through. curl, an independent client,
 * posts a review to `/validate` directly.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { kubectlSkip, kubectlWith } from './helpers/kubectl.js';
import { startApiServer, startIstiodOnApi } from './helpers/in-process.js';
import { CapturedLogs } from './helpers/captured-logs.js';
import { runToExit } from './helpers/run-to-exit.js';
import type { ApiServer } from '../src/apiserver/api-server.js';
import type { Istiod } from '../src/istiod/istiod.js';

const VALIDATOR = 'istiod-default-validator';

/** The base chart's default-revision validator, as shipped: fail open, no caBundle. */
const validator = {
  apiVersion: 'admissionregistration.k8s.io/v1',
  kind: 'ValidatingWebhookConfiguration',
  metadata: { name: VALIDATOR, labels: { app: 'istiod', 'istio.io/rev': 'default' } },
  webhooks: [
    {
      name: 'validation.istio.io',
      clientConfig: { service: { name: 'istiod', namespace: 'istio-system', path: '/validate' } },
      rules: [
        {
          operations: ['CREATE', 'UPDATE'],
          apiGroups: ['security.istio.io', 'networking.istio.io', 'telemetry.istio.io', 'extensions.istio.io'],
          apiVersions: ['*'],
          resources: ['*'],
        },
      ],
      failurePolicy: 'Ignore',
      sideEffects: 'None',
      admissionReviewVersions: ['v1'],
    },
  ],
};

const policy = (name: string, spec: object): object => ({
  apiVersion: 'security.istio.io/v1',
  kind: 'AuthorizationPolicy',
  metadata: { name, namespace: 'shop' },
  spec,
});

describe("istiod's validating webhook", { skip: kubectlSkip }, () => {
  let dir: string;
  let api: ApiServer;
  let istiod: Istiod;
  const logs = new CapturedLogs('istiod');
  const { kubectl, ok } = kubectlWith(() => api.kubeconfigPath);

  const apply = async (doc: object): Promise<{ status: number | null; stderr: string }> => {
    const file = path.join(dir, `doc-${String(Math.random()).slice(2)}.json`);
    await writeFile(file, JSON.stringify(doc));
    return kubectl('apply', '-f', file);
  };
  const stored = async (name: string): Promise<boolean> =>
    (await kubectl('-n', 'shop', 'get', 'authorizationpolicy', name)).status === 0;

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'amesh-validation-webhook-'));
    api = await startApiServer(path.join(dir, 'api'));
    await ok('create', 'namespace', 'istio-system');
    await ok('create', 'namespace', 'shop');
    istiod = await startIstiodOnApi(api.kubeconfigPath, path.join(dir, 'istiod'), '127.0.0.1', logs.control);
    // The istiod Service and the endpoint the EndpointSlice controller would give it: istiod's webhook port.
    await ok('-n', 'istio-system', 'create', 'service', 'clusterip', 'istiod', '--tcp=443:15017');
    const slice = await apply({
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { name: 'istiod-1', namespace: 'istio-system', labels: { 'kubernetes.io/service-name': 'istiod' } },
      addressType: 'IPv4',
      endpoints: [{ addresses: ['127.0.0.1'], conditions: { ready: true } }],
      ports: [{ name: '443-15017', port: istiod.ports.webhook, protocol: 'TCP' }],
    });
    assert.equal(slice.status, 0, slice.stderr);
  });

  after(async () => {
    await istiod?.stop();
    await api?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  test('istiod sets the caBundle and fails closed once its webhook refused the probe', async () => {
    const switched = logs.waitFor(
      'the validator switched to Fail',
      (l) => l.message === 'webhook configuration updated' && l.failurePolicy === 'Fail',
    );
    const r = await apply(validator);
    assert.equal(r.status, 0, r.stderr);
    await switched;
    const hook = JSON.parse(
      await ok('get', 'validatingwebhookconfiguration', VALIDATOR, '-o', 'jsonpath={.webhooks[0]}'),
    ) as { failurePolicy: string; clientConfig: { caBundle: string } };
    assert.equal(hook.failurePolicy, 'Fail');
    assert.match(Buffer.from(hook.clientConfig.caBundle, 'base64').toString(), /-----BEGIN CERTIFICATE-----/);
    // The probe was a dry run: nothing was created.
    assert.equal(
      (await kubectl('-n', 'istio-system', 'get', 'gateways.networking.istio.io', 'invalid-gateway')).status,
      1,
    );
  });

  test('an AuthorizationPolicy istiod could not honour is refused with its reason and not stored', async () => {
    const r = await apply(
      policy('bad-ports', { action: 'DENY', rules: [{ to: [{ operation: { ports: ['http', '99999'] } }] }] }),
    );
    assert.notEqual(r.status, 0);
    assert.match(
      r.stderr,
      /admission webhook "validation\.istio\.io" denied the request: configuration is invalid: .*spec\.rules\[0\]\.to\[0\]\.operation\.ports/,
      r.stderr,
    );
    assert.equal(await stored('bad-ports'), false);
    const good = await apply(policy('good', { action: 'DENY', rules: [{ to: [{ operation: { ports: ['8080'] } }] }] }));
    assert.equal(good.status, 0, good.stderr);
    assert.equal(await stored('good'), true);
  });

  test('curl posting a review to /validate gets the same answer', async () => {
    const review = {
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      request: {
        uid: 'abc',
        kind: { group: 'security.istio.io', version: 'v1', kind: 'AuthorizationPolicy' },
        operation: 'CREATE',
        namespace: 'shop',
        object: {
          ...policy('x', {}),
          metadata: { name: 'x', namespace: 'shop', annotations: { 'internal.istio.io/webhook-always-reject': '' } },
        },
      },
    };
    const r = await runToExit(
      'curl',
      [
        '-sS',
        '--cacert',
        istiod.rootCertPath,
        '--connect-to',
        `istiod.istio-system.svc:443:127.0.0.1:${String(istiod.ports.webhook)}`,
        '-H',
        'content-type: application/json',
        '--data-binary',
        JSON.stringify(review),
        'https://istiod.istio-system.svc/validate',
      ],
      10_000,
    );
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), {
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      response: {
        uid: 'abc',
        allowed: false,
        status: {
          message: 'configuration is invalid: "internal.istio.io/webhook-always-reject" annotation found, rejecting',
        },
      },
    });
  });

  test('with istiod down, failurePolicy Fail refuses the apply instead of letting it through', async () => {
    await istiod.stop();
    const r = await apply(policy('unchecked', { action: 'ALLOW' }));
    assert.notEqual(r.status, 0);
    assert.match(
      r.stderr,
      /Internal error occurred: failed calling webhook "validation\.istio\.io": failed to call webhook: Post "https:\/\/istiod\.istio-system\.svc:443\/validate\?timeout=10s": dial tcp 127\.0\.0\.1:\d+: connect: connection refused/,
      r.stderr,
    );
    assert.equal(await stored('unchecked'), false);
  });
});
