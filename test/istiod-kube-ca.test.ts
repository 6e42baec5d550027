import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { createKeyAndCsr } from '../src/lib/pki/csr.js';
import { parseIdentity } from '../src/lib/spiffe.js';
import { loadKubeConfig } from '../src/kube/kube-config.js';
import { requestToken } from '../src/kube/request-token.js';
import type { ApiServer } from '../src/apiserver/api-server.js';
import type { Istiod } from '../src/istiod/istiod.js';
import { CA_ROOT_CONFIGMAP, CA_ROOT_CONFIGMAP_KEY } from '../src/istiod/namespace-controller.js';
import { IstioCaClient } from '../src/ztunnel/identity/istio-ca-client.js';
import { ameshCommand } from '../src/up/amesh-command.js';
import { CapturedLogs } from './helpers/captured-logs.js';
import { startApiServer, startIstiodOnApi } from './helpers/in-process.js';
import { pythonSkip, runPython } from './helpers/python.js';
import { runToExit } from './helpers/run-to-exit.js';

const API_HOST = '127.84.0.1';
const ISTIOD_HOST = '127.84.0.2';
const container = [{ name: 'c', image: 'busybox' }];

describe('istiod on the Kubernetes API: TokenReview authentication, node authorization from pods, istio-ca-root-cert', () => {
  let dir: string;
  let api: ApiServer;
  let core: k8s.CoreV1Api;
  let kc: k8s.KubeConfig;
  let ist: Istiod;
  let root: string;
  const logs = new CapturedLogs('istiod');

  const pod = (namespace: string, name: string, serviceAccount: string, nodeName: string): Promise<k8s.V1Pod> =>
    core.createNamespacedPod({
      namespace,
      body: { metadata: { name }, spec: { serviceAccountName: serviceAccount, nodeName, containers: container } },
    });
  const ztunnelToken = (podName: string, audience = 'istio-ca'): Promise<string> =>
    requestToken(kc, {
      namespace: 'istio-system',
      serviceAccount: 'ztunnel',
      pod: podName,
      audience,
      ttlSeconds: 3600,
    });

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'amesh-kube-ca-'));
    api = await startApiServer(path.join(dir, 'api'), { listen: `${API_HOST}:0` });
    kc = loadKubeConfig(api.kubeconfigPath, {});
    core = kc.makeApiClient(k8s.CoreV1Api);
    for (const ns of ['istio-system', 'app', 'other']) await core.createNamespace({ body: { metadata: { name: ns } } });
    for (const [ns, sa] of [
      ['istio-system', 'ztunnel'],
      ['app', 'web'],
      ['other', 'db'],
    ] as const)
      await core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: sa } } });
    for (const node of ['node-a', 'node-b']) await core.createNode({ body: { metadata: { name: node } } });
    await pod('istio-system', 'ztunnel-a', 'ztunnel', 'node-a');
    await pod('app', 'web-1', 'web', 'node-a');
    await pod('other', 'db-1', 'db', 'node-b');
    ist = await startIstiodOnApi(api.kubeconfigPath, path.join(dir, 'istiod'), ISTIOD_HOST, logs.control);
    root = await readFile(ist.rootCertPath, 'utf8');
  });
  after(async () => {
    await ist?.stop();
    await api?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  /** CreateCertificate for `uri` with `token`, through ztunnel's own CA client, impersonating unless `own`. */
  async function certificate(
    token: string,
    uri: string,
    o: { own?: boolean; clusterId?: string } = {},
  ): Promise<string[]> {
    const tokenFile = path.join(dir, `token-${Math.random()}`);
    await writeFile(tokenFile, token);
    const client = new IstioCaClient({
      address: `https://${ISTIOD_HOST}:${ist.ports.grpc}`,
      rootPem: root,
      tokenFile,
      clusterId: o.clusterId ?? 'Kubernetes',
      impersonate: o.own !== true,
      altHostname: 'istiod.istio-system.svc',
    });
    try {
      return await client.fetchCertificate(parseIdentity(uri), (await createKeyAndCsr(uri)).csrPem, 3600);
    } finally {
      client.close();
    }
  }

  /** The call fails UNAUTHENTICATED with Istio's opaque `details`; the reason, `logged`, is in istiod's log only. */
  async function refused(p: Promise<unknown>, details: string, logged: RegExp): Promise<void> {
    const from = logs.lines.length;
    await assert.rejects(p, (e: unknown) => {
      assert.match(String(e), new RegExp(`UNAUTHENTICATED: ${details}$`));
      assert.doesNotMatch(String(e), logged);
      return true;
    });
    const reasons = logs.lines.slice(from).map((l) => (typeof l['error'] === 'string' ? l['error'] : ''));
    assert.ok(
      reasons.some((r) => logged.test(r)),
      `expected ${String(logged)} in istiod's log, got ${JSON.stringify(reasons)}`,
    );
  }

  const leafSan = (chain: string[]): string | undefined => new X509Certificate(chain[0]!).subjectAltName;

  test("a ztunnel's pod-bound TokenRequest token gets certificates for service accounts with a pod on its node", async () => {
    const chain = await certificate(await ztunnelToken('ztunnel-a'), 'spiffe://cluster.local/ns/app/sa/web');
    assert.equal(leafSan(chain), 'URI:spiffe://cluster.local/ns/app/sa/web');
  });

  test("impersonating a service account with no pod on the node is refused opaquely, node_auth.go's reason logged", async () => {
    await refused(
      certificate(await ztunnelToken('ztunnel-a'), 'spiffe://cluster.local/ns/other/sa/db'),
      'request impersonation authentication failure',
      /no instances of "other\/db" found on node "node-a"/,
    );
  });

  test('a ztunnel token bound to no pod may not impersonate: the node comes only from the bound pod', async () => {
    const unbound = await requestToken(kc, {
      namespace: 'istio-system',
      serviceAccount: 'ztunnel',
      audience: 'istio-ca',
      ttlSeconds: 3600,
    });
    await refused(
      certificate(unbound, 'spiffe://cluster.local/ns/app/sa/web'),
      'request impersonation authentication failure',
      /istio-system\/ztunnel is bound to no pod/,
    );
  });

  test('a workload token without a pod binding gets its own identity, and may not impersonate', async () => {
    const token = await requestToken(kc, {
      namespace: 'app',
      serviceAccount: 'web',
      audience: 'istio-ca',
      ttlSeconds: 3600,
    });
    assert.equal(
      leafSan(await certificate(token, 'spiffe://cluster.local/ns/app/sa/web', { own: true })),
      'URI:spiffe://cluster.local/ns/app/sa/web',
    );
    await refused(
      certificate(token, 'spiffe://cluster.local/ns/app/sa/web'),
      'request impersonation authentication failure',
      /app\/web is not in CA_TRUSTED_NODE_ACCOUNTS/,
    );
  });

  test('the token of a pod deleted and recreated under the same name is refused by TokenReview', async () => {
    await pod('istio-system', 'ztunnel-r', 'ztunnel', 'node-a');
    const token = await ztunnelToken('ztunnel-r');
    await core.deleteNamespacedPod({ namespace: 'istio-system', name: 'ztunnel-r', gracePeriodSeconds: 0 });
    await pod('istio-system', 'ztunnel-r', 'ztunnel', 'node-a');
    await refused(
      certificate(token, 'spiffe://cluster.local/ns/app/sa/web'),
      'request authenticate failure',
      /pod UID \(.+\) does not match service account pod ref claim/,
    );
  });

  test('a token for another audience is refused (TokenReview with TOKEN_AUDIENCES)', async () => {
    await refused(
      certificate(await ztunnelToken('ztunnel-a', 'kubernetes'), 'spiffe://cluster.local/ns/app/sa/web'),
      'request authenticate failure',
      /token audiences \["kubernetes"\] is invalid for the target audiences \["istio-ca"\]/,
    );
  });

  test('a caller that names another cluster in its clusterid metadata is refused', async () => {
    await refused(
      certificate(await ztunnelToken('ztunnel-a'), 'spiffe://cluster.local/ns/app/sa/web', { clusterId: 'east' }),
      'request authenticate failure',
      /client claims to be in cluster "east", but we only know about local cluster "Kubernetes"/,
    );
  });

  test("istiod's local-issuer tokens are not trusted once it has an API", async () => {
    const local = await ist.issuer.issue({
      namespace: 'istio-system',
      serviceAccount: 'ztunnel',
      node: 'node-a',
      audience: 'istio-ca',
    });
    await refused(
      certificate(local, 'spiffe://cluster.local/ns/app/sa/web'),
      'request authenticate failure',
      /TokenReview|invalid bearer token/,
    );
  });

  test('istio-ca-root-cert holds the root in every namespace, labelled istio.io/config, and is skipped in kube-public', async () => {
    // kube-public and kube-system exist from the API server's bootstrap.
    await core.createNamespace({ body: { metadata: { name: 'team-a' } } });
    await logs.waitFor(
      'team-a published',
      (l) => l['message'] === 'root certificate published' && l['namespace'] === 'team-a',
    );
    for (const ns of ['istio-system', 'app', 'other', 'kube-system', 'team-a']) {
      const cm = await core.readNamespacedConfigMap({ namespace: ns, name: CA_ROOT_CONFIGMAP });
      assert.equal(cm.data?.[CA_ROOT_CONFIGMAP_KEY], root, ns);
      assert.deepEqual(cm.metadata?.labels, { 'istio.io/config': 'true' });
    }
    // Namespaces are reconciled in the order their events arrive: kube-public was listed before team-a came.
    await assert.rejects(
      core.readNamespacedConfigMap({ namespace: 'kube-public', name: CA_ROOT_CONFIGMAP }),
      (e: unknown) => (e as { code?: number }).code === 404,
    );
  });

  test('istio-ca-root-cert is recreated after deletion, and an edited root is restored with other keys kept', async () => {
    const published = (ns: string): number =>
      logs.lines.filter((l) => l['message'] === 'root certificate published' && l['namespace'] === ns).length;
    const before = published('app');
    await core.deleteNamespacedConfigMap({ namespace: 'app', name: CA_ROOT_CONFIGMAP });
    await logs.waitFor('app republished', () => published('app') > before);
    assert.equal(
      (await core.readNamespacedConfigMap({ namespace: 'app', name: CA_ROOT_CONFIGMAP })).data?.[CA_ROOT_CONFIGMAP_KEY],
      root,
    );

    const cm = await core.readNamespacedConfigMap({ namespace: 'app', name: CA_ROOT_CONFIGMAP });
    await core.replaceNamespacedConfigMap({
      namespace: 'app',
      name: CA_ROOT_CONFIGMAP,
      body: { metadata: cm.metadata, data: { [CA_ROOT_CONFIGMAP_KEY]: 'tampered', extra: 'kept' } },
    });
    await logs.waitFor('app restored', (l) => l['message'] === 'root certificate restored' && l['namespace'] === 'app');
    assert.deepEqual((await core.readNamespacedConfigMap({ namespace: 'app', name: CA_ROOT_CONFIGMAP })).data, {
      [CA_ROOT_CONFIGMAP_KEY]: root,
      extra: 'kept',
    });
  });

  test('`amesh istiod token --kubeconfig --pod` prints a TokenRequest token that passes TokenReview, bound to the pod', async () => {
    const { cmd, args } = ameshCommand();
    const r = await runToExit(
      cmd,
      [
        ...args,
        'istiod',
        'token',
        '--kubeconfig',
        api.kubeconfigPath,
        '--namespace',
        'istio-system',
        '--service-account',
        'ztunnel',
        '--pod',
        'ztunnel-a',
      ],
      30_000,
    );
    assert.equal(r.status, 0, r.stderr);
    const token = r.stdout.trim();
    const review = await kc
      .makeApiClient(k8s.AuthenticationV1Api)
      .createTokenReview({ body: { spec: { token, audiences: ['istio-ca'] } } });
    assert.equal(review.status?.authenticated, true, review.status?.error);
    assert.equal(review.status?.user?.username, 'system:serviceaccount:istio-system:ztunnel');
    assert.deepEqual(review.status?.user?.extra?.['authentication.kubernetes.io/pod-name'], ['ztunnel-a']);
    assert.equal(
      leafSan(await certificate(token, 'spiffe://cluster.local/ns/app/sa/web')),
      'URI:spiffe://cluster.local/ns/app/sa/web',
    );
  });

  test(
    'python3-grpcio (hand-encoded CreateCertificate) impersonates with a TokenRequest token',
    { skip: pythonSkip('grpc', 'python3-grpcio') },
    async () => {
      const csr = path.join(dir, 'grpcio-csr.pem');
      await writeFile(csr, (await createKeyAndCsr('spiffe://cluster.local/ns/app/sa/web')).csrPem);
      const call = async (uri: string): Promise<{ code: string; details: string; chain: string[] }> => {
        const r = await runPython('ca_grpcio.py', [
          `${ISTIOD_HOST}:${ist.ports.grpc}`,
          ist.rootCertPath,
          await ztunnelToken('ztunnel-a'),
          csr,
          uri,
        ]);
        assert.equal(r.status, 0, r.stderr);
        return JSON.parse(r.stdout) as { code: string; details: string; chain: string[] };
      };
      const ok = await call('spiffe://cluster.local/ns/app/sa/web');
      assert.equal(ok.code, 'OK', ok.details);
      assert.equal(leafSan(ok.chain), 'URI:spiffe://cluster.local/ns/app/sa/web');
      const denied = await call('spiffe://cluster.local/ns/other/sa/db');
      assert.deepEqual(
        [denied.code, denied.details],
        ['UNAUTHENTICATED', 'request impersonation authentication failure'],
      );
    },
  );
});
