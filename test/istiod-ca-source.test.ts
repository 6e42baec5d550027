/**
 * Where istiod's CA comes from on a Kubernetes API, against the embedded API server: the self-signed CA kept in
 * `istio-ca-secret` (shared by istiods that start with nothing of their own), a plug-in CA in ROOT_CA_DIR made by the
 * openssl CLI (which wins over the Secret and is what istiod publishes and chains to), and a malformed Secret, which
 * holds istiod's start until it is fixed and stops it when it is not.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import type { ApiServer } from '../src/apiserver/api-server.js';
import { ISTIO_CA_SECRET, istioCaSecret } from '../src/istiod/ca/istio-ca-secret.js';
import type { Istiod } from '../src/istiod/istiod.js';
import { CA_ROOT_CONFIGMAP, CA_ROOT_CONFIGMAP_KEY } from '../src/istiod/namespace-controller.js';
import { loadKubeConfig } from '../src/kube/kube-config.js';
import { requestToken } from '../src/kube/request-token.js';
import { isMeshError } from '../src/lib/errors.js';
import { createSelfSignedRootPem } from '../src/lib/pki/ca-certificates.js';
import { createKeyAndCsr } from '../src/lib/pki/csr.js';
import { parseIdentity } from '../src/lib/spiffe.js';
import { IstioCaClient } from '../src/ztunnel/identity/istio-ca-client.js';
import { CapturedLogs } from './helpers/captured-logs.js';
import { startApiServer, startIstiod } from './helpers/in-process.js';
import { opensslPluginCa } from './helpers/openssl-ca.js';

const WEB = 'spiffe://cluster.local/ns/app/sa/web';
const decode = (b64: string | undefined): string => Buffer.from(b64 ?? '', 'base64').toString('utf8');
const noOpenssl = spawnSync('openssl', ['version']).status === 0 ? false : 'needs the openssl command';

describe("istiod's CA on a Kubernetes API: istio-ca-secret, a plug-in CA in ROOT_CA_DIR, a malformed Secret", () => {
  let dir: string;
  let api: ApiServer;
  let kc: k8s.KubeConfig;
  let core: k8s.CoreV1Api;
  const running: Istiod[] = [];

  /** An istiod with a fresh state directory, on the API, its logs captured. */
  const start = async (
    name: string,
    env: Record<string, string> = {},
    caSecretTimeoutMs?: number,
  ): Promise<{ ist: Istiod; logs: CapturedLogs }> => {
    const logs = new CapturedLogs('istiod');
    const ist = await startIstiod(undefined, path.join(dir, name), {
      kubeconfig: api.kubeconfigPath,
      env,
      logs: logs.control,
      ...(caSecretTimeoutMs === undefined ? {} : { caSecretTimeoutMs }),
    });
    running.push(ist);
    return { ist, logs };
  };
  const stopAll = async (): Promise<void> => {
    for (const ist of running.splice(0)) await ist.stop();
  };
  const published = (ist: Istiod): Promise<string> => readFile(ist.rootCertPath, 'utf8');
  const secret = (namespace: string): Promise<k8s.V1Secret> =>
    core.readNamespacedSecret({ name: ISTIO_CA_SECRET, namespace });
  /** The namespace's istio-ca-root-cert once istiod has written `root` there (it logs each write). */
  const rootConfigMap = async (logs: CapturedLogs, namespace: string): Promise<string | undefined> => {
    await logs.waitFor(
      `istio-ca-root-cert written in ${namespace}`,
      (l) => l['namespace'] === namespace && String(l['message']).startsWith('root certificate '),
    );
    return (await core.readNamespacedConfigMap({ name: CA_ROOT_CONFIGMAP, namespace })).data?.[CA_ROOT_CONFIGMAP_KEY];
  };

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'amesh-ca-source-'));
    api = await startApiServer(path.join(dir, 'api'));
    kc = loadKubeConfig(api.kubeconfigPath, {});
    core = kc.makeApiClient(k8s.CoreV1Api);
    for (const ns of ['istio-system', 'race', 'broken', 'app'])
      await core.createNamespace({ body: { metadata: { name: ns } } });
    await core.createNamespacedServiceAccount({ namespace: 'app', body: { metadata: { name: 'web' } } });
  });
  after(async () => {
    await stopAll();
    await api?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  test('istiods started with fresh state directories sign with one root: the first creates istio-ca-secret, the next read it', async () => {
    const first = await start('first');
    const root = await published(first.ist);
    const stored = await secret('istio-system');
    assert.equal(stored.type, 'istio.io/ca-root');
    assert.equal(decode(stored.data?.['ca-cert.pem']), root);
    assert.equal(decode(stored.data?.['root-cert.pem']), root);
    assert.ok(first.logs.lines.some((l) => l['message'] === 'created a self-signed CA and stored it in its Secret'));
    assert.equal(await rootConfigMap(first.logs, 'app'), root);
    await stopAll();

    const second = await start('second');
    assert.equal(await published(second.ist), root, 'a restarted istiod keeps the root');
    assert.ok(second.logs.lines.some((l) => l['message'] === 'signing with the self-signed CA from its Secret'));
    assert.equal((await secret('istio-system')).metadata?.resourceVersion, stored.metadata?.resourceVersion);
    await stopAll();

    // Two replicas starting at once, in a namespace without the Secret: one creates it, both sign with its root.
    const [a, b] = await Promise.all([
      start('race-a', { POD_NAMESPACE: 'race' }),
      start('race-b', { POD_NAMESPACE: 'race' }),
    ]);
    const raced = decode((await secret('race')).data?.['ca-cert.pem']);
    assert.deepEqual([await published(a.ist), await published(b.ist)], [raced, raced]);
    const created = [a, b].filter((r) => r.logs.lines.some((l) => String(l['message']).startsWith('created')));
    assert.equal(created.length, 1, 'exactly one replica created the Secret');
    await stopAll();
  });

  test(
    'a plug-in CA in ROOT_CA_DIR (made by openssl) wins over istio-ca-secret: workload certificates chain to its root-cert.pem, which istiod publishes',
    { skip: noOpenssl },
    async () => {
      const cacerts = path.join(dir, 'cacerts');
      await opensslPluginCa(cacerts);
      const rootPem = await readFile(path.join(cacerts, 'root-cert.pem'), 'utf8');
      const before = await secret('istio-system');
      const admission = kc.makeApiClient(k8s.AdmissionregistrationV1Api);
      await admission.createValidatingWebhookConfiguration({
        body: {
          metadata: { name: 'istio-validator-istio-system', labels: { 'istio.io/rev': 'default' } },
          webhooks: [
            {
              name: 'rev.validation.istio.io',
              clientConfig: { url: 'https://127.0.0.1:1/validate' },
              rules: [],
              sideEffects: 'None',
              admissionReviewVersions: ['v1'],
              failurePolicy: 'Ignore',
            },
          ],
        },
      });
      const { ist, logs } = await start('plugged', { ROOT_CA_DIR: cacerts });
      assert.ok(logs.lines.some((l) => l['message'] === 'signing with the plug-in CA' && l['dir'] === cacerts));
      assert.equal(await published(ist), rootPem, 'root-cert.pem is published, not the intermediate');
      assert.equal(await rootConfigMap(logs, 'app'), rootPem);
      await logs.waitFor('the webhook caBundle written', (l) => l['message'] === 'webhook configuration updated');
      const vwc = await admission.readValidatingWebhookConfiguration({ name: 'istio-validator-istio-system' });
      assert.equal(decode(vwc.webhooks?.[0]?.clientConfig.caBundle), rootPem);
      assert.equal((await secret('istio-system')).metadata?.resourceVersion, before.metadata?.resourceVersion);

      const tokenFile = path.join(dir, 'web.token');
      await writeFile(
        tokenFile,
        await requestToken(kc, { namespace: 'app', serviceAccount: 'web', audience: 'istio-ca', ttlSeconds: 3600 }),
      );
      const client = new IstioCaClient({
        address: `https://127.0.0.1:${ist.ports.grpc}`,
        rootPem,
        tokenFile,
        clusterId: 'Kubernetes',
        impersonate: false,
        altHostname: 'istiod.istio-system.svc',
      });
      let chain: string[];
      try {
        chain = await client.fetchCertificate(parseIdentity(WEB), (await createKeyAndCsr(WEB)).csrPem, 3600);
      } finally {
        client.close();
      }
      await writeFile(path.join(dir, 'leaf.pem'), chain[0]!);
      await writeFile(path.join(dir, 'intermediates.pem'), chain.slice(1, -1).join(''));
      assert.equal(chain[chain.length - 1], rootPem, 'the chain ends with the plug-in root');
      const verify = spawnSync(
        'openssl',
        [
          'verify',
          '-x509_strict',
          '-CAfile',
          path.join(cacerts, 'root-cert.pem'),
          '-untrusted',
          path.join(dir, 'intermediates.pem'),
          path.join(dir, 'leaf.pem'),
        ],
        { encoding: 'utf8' },
      );
      assert.equal(verify.status, 0, verify.stdout + verify.stderr);
      await stopAll();
    },
  );

  test('a malformed istio-ca-secret holds istiod back until it is fixed, and stops it with ISTIOD_ERR_CA_SECRET naming the Secret and key when it is not', async () => {
    const good = await createSelfSignedRootPem('O=cluster.local', 24 * 3600_000);
    const bad = istioCaSecret('broken', good.certPem, good.keyPem);
    bad.data!['ca-key.pem'] = Buffer.from('not a key').toString('base64');
    await core.createNamespacedSecret({ namespace: 'broken', body: bad });

    await assert.rejects(start('refused', { POD_NAMESPACE: 'broken' }, 0), (e: unknown) => {
      assert.ok(isMeshError(e, 'ISTIOD_ERR_CA_SECRET'), String(e));
      assert.match(e.message, /^Secret broken\/istio-ca-secret key ca-key\.pem: not a PEM private key/);
      return true;
    });
    assert.equal(running.length, 0);

    const logs = new CapturedLogs('istiod');
    const waiting = startIstiod(undefined, path.join(dir, 'waiting'), {
      kubeconfig: api.kubeconfigPath,
      env: { POD_NAMESPACE: 'broken' },
      logs: logs.control,
    });
    const warned = await logs.waitFor('the Secret refused', (l) => l['message'] === 'no usable CA yet');
    assert.match(String(warned['error']), /^ISTIOD_ERR_CA_SECRET: Secret broken\/istio-ca-secret key ca-key\.pem/);
    const fixed = await core.readNamespacedSecret({ name: ISTIO_CA_SECRET, namespace: 'broken' });
    fixed.data!['ca-key.pem'] = Buffer.from(good.keyPem).toString('base64');
    await core.replaceNamespacedSecret({ name: ISTIO_CA_SECRET, namespace: 'broken', body: fixed });
    const ist = await waiting;
    running.push(ist);
    assert.equal(await published(ist), good.certPem, 'the fixed Secret, not a new root');
    await stopAll();
  });
});
