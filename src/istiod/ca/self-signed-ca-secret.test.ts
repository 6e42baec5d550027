import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { ApiException, type V1Secret } from '@kubernetes/client-node';
import { isMeshError } from '../../lib/errors.js';
import { LogControl } from '../../lib/log.js';
import { createSelfSignedRootPem } from '../../lib/pki/ca-certificates.js';
import { istioCaSecret } from './istio-ca-secret.js';
import { loadOrCreateCaSecret, type CaSecretApi, type SelfSignedCaSecretOptions } from './self-signed-ca-secret.js';

const OPTIONS: SelfSignedCaSecretOptions = {
  namespace: 'istio-system',
  trustDomain: 'cluster.local',
  rootTtlMs: 24 * 3600_000,
  timeoutMs: 0,
};

const apiError = (code: number, reason: string): ApiException<string> =>
  new ApiException(code, `HTTP-Code: ${code}`, JSON.stringify({ kind: 'Status', code, reason, message: reason }), {});

/** An API holding Secrets by name, counting calls; `before` runs ahead of each call and may throw or add a Secret. */
class FakeSecrets implements CaSecretApi {
  readonly secrets = new Map<string, V1Secret>();
  readonly calls: string[] = [];
  constructor(private readonly before: (call: string, n: number) => void = () => {}) {}

  readNamespacedSecret(p: { name: string; namespace: string }): Promise<V1Secret> {
    return this.call('read', () => {
      const s = this.secrets.get(`${p.namespace}/${p.name}`);
      if (s === undefined) throw apiError(404, 'NotFound');
      return s;
    });
  }

  createNamespacedSecret(p: { namespace: string; body: V1Secret }): Promise<V1Secret> {
    return this.call('create', () => {
      const key = `${p.namespace}/${p.body.metadata!.name!}`;
      if (this.secrets.has(key)) throw apiError(409, 'AlreadyExists');
      this.secrets.set(key, p.body);
      return p.body;
    });
  }

  private async call(name: string, f: () => V1Secret): Promise<V1Secret> {
    this.calls.push(name);
    this.before(name, this.calls.length);
    return Promise.resolve(f());
  }
}

function logs(): { log: ReturnType<LogControl['scope']>; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const out = new Writable({
    write: (c: Buffer, _e, cb) => {
      for (const l of c
        .toString()
        .split('\n')
        .filter((x) => x !== ''))
        lines.push(JSON.parse(l) as Record<string, unknown>);
      cb();
    },
  });
  return { log: new LogControl({ format: 'json', level: 'info', component: 'istiod', out }).scope('ca'), lines };
}

test('with no Secret, a root is made and the Secret created once; a second istiod signs with that root', async () => {
  const api = new FakeSecrets();
  const { log, lines } = logs();
  const first = await loadOrCreateCaSecret(api, OPTIONS, log);
  const second = await loadOrCreateCaSecret(api, OPTIONS, log);
  assert.deepEqual(api.calls, ['read', 'create', 'read']);
  assert.equal(second.rootBundlePem, first.rootBundlePem);
  assert.equal(first.caCert.subject, 'O=cluster.local');
  const lifetime = Date.parse(first.caCert.validTo) - Date.parse(first.caCert.validFrom);
  assert.ok(Math.abs(lifetime - OPTIONS.rootTtlMs) < 5 * 60_000, 'the root lives CITADEL_SELF_SIGNED_CA_CERT_TTL');
  assert.deepEqual(
    lines.map((l) => l['message']),
    ['created a self-signed CA and stored it in its Secret', 'signing with the self-signed CA from its Secret'],
  );
});

test("an istiod that loses the race to create the Secret (AlreadyExists) signs with the winner's root at once", async () => {
  const theirs = await createSelfSignedRootPem('O=cluster.local', OPTIONS.rootTtlMs);
  const api = new FakeSecrets((call) => {
    // The other replica creates its Secret between this one's read and create.
    if (call === 'create')
      api.secrets.set('istio-system/istio-ca-secret', istioCaSecret('istio-system', theirs.certPem, theirs.keyPem));
  });
  const ca = await loadOrCreateCaSecret(api, OPTIONS, logs().log);
  assert.equal(ca.rootBundlePem, theirs.certPem);
  assert.deepEqual(api.calls, ['read', 'create', 'read']);
});

test('a malformed Secret is never overwritten: istiod gives up with ISTIOD_ERR_CA_SECRET naming the Secret and key', async () => {
  const root = await createSelfSignedRootPem('O=cluster.local', OPTIONS.rootTtlMs);
  const api = new FakeSecrets();
  const bad = istioCaSecret('istio-system', root.certPem, root.keyPem);
  bad.data!['ca-key.pem'] = '';
  api.secrets.set('istio-system/istio-ca-secret', bad);
  const { log, lines } = logs();
  await assert.rejects(
    loadOrCreateCaSecret(api, { ...OPTIONS, timeoutMs: 300 }, log),
    (e: unknown) =>
      isMeshError(e, 'ISTIOD_ERR_CA_SECRET') &&
      /^Secret istio-system\/istio-ca-secret key ca-key\.pem: is empty.*\(gave up after retrying for 0\.3 s\)$/.test(
        e.message,
      ),
  );
  assert.ok(!api.calls.includes('create'));
  assert.ok(api.calls.length >= 2, 'retried before giving up');
  assert.match(
    String(lines[0]?.['error']),
    /^ISTIOD_ERR_CA_SECRET: Secret istio-system\/istio-ca-secret key ca-key\.pem/,
  );
});

test('an API that fails at first is retried with backoff, each failure logged with its reason', async () => {
  const api = new FakeSecrets((_call, n) => {
    if (n === 1) throw apiError(503, 'ServiceUnavailable');
  });
  const { log, lines } = logs();
  const ca = await loadOrCreateCaSecret(api, { ...OPTIONS, timeoutMs: 60_000 }, log);
  const stored = api.secrets.get('istio-system/istio-ca-secret')?.data?.['ca-cert.pem'];
  assert.equal(Buffer.from(stored ?? '', 'base64').toString(), ca.rootBundlePem);
  assert.deepEqual(api.calls, ['read', 'read', 'create']);
  assert.equal(lines[0]?.['message'], 'no usable CA yet');
  assert.match(
    String(lines[0]?.['error']),
    /^ISTIOD_ERR_KUBE_API: cannot read Secret istio-system\/istio-ca-secret: 503 ServiceUnavailable/,
  );
  const wait = Number(lines[0]?.['retryInMs']);
  assert.ok(wait >= 250 && wait <= 750, `first retry after 0.5 s ±50 %, got ${wait}`);
});
