import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import https from 'node:https';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { SignJWT, importPKCS8 } from 'jose';
import { startApiServer } from './helpers/in-process.js';
import type { ApiServer } from '../src/apiserver/api-server.js';
import { applyRbac } from '../src/up/apply-rbac.js';
import { generateManifest } from '../src/install/generate-manifest.js';
import { parseSetFlag } from '../src/install/set-flag.js';

interface Reply {
  status: number;
  body: Record<string, unknown>;
}

describe('amesh apiserver authentication and authorization', () => {
  let dir: string;
  let api: ApiServer;
  let admin: string;

  const call = (method: string, p: string, token: string | undefined, body?: unknown): Promise<Reply> =>
    new Promise((resolve, reject) => {
      const data = body === undefined ? undefined : JSON.stringify(body);
      const req = https.request(
        {
          host: '127.0.0.1',
          port: api.port,
          method,
          path: p,
          ca: api.caCertPem,
          servername: 'localhost',
          headers: {
            ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
            ...(data === undefined ? {} : { 'content-type': 'application/json' }),
          },
        },
        (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString()));
          res.on('end', () =>
            resolve({
              status: res.statusCode ?? 0,
              body: text === '' || !text.startsWith('{') ? { text } : (JSON.parse(text) as Record<string, unknown>),
            }),
          );
        },
      );
      req.on('error', reject);
      req.end(data);
    });
  const must = async (method: string, p: string, body?: unknown): Promise<Record<string, unknown>> => {
    const r = await call(method, p, admin, body);
    assert.ok(r.status < 300, `${method} ${p}: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body;
  };
  const tokenFor = async (
    ns: string,
    sa: string,
    spec: Record<string, unknown> = { audiences: ['istio-ca'] },
  ): Promise<string> => {
    const tr = await must('POST', `/api/v1/namespaces/${ns}/serviceaccounts/${sa}/token`, {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec,
    });
    return (tr.status as { token: string }).token;
  };
  const review = async (
    token: string,
    audiences = ['istio-ca'],
  ): Promise<{ authenticated?: boolean; error?: string }> =>
    (
      await must('POST', '/apis/authentication.k8s.io/v1/tokenreviews', {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenReview',
        spec: { token, audiences },
      })
    ).status as { authenticated?: boolean; error?: string };

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'amesh-apisec-'));
    api = await startApiServer(path.join(dir, 'data'));
    const kubeconfig = await readFile(api.kubeconfigPath, 'utf8');
    admin = /token: (\S+)/.exec(kubeconfig)?.[1] ?? '';
    await must('POST', '/api/v1/namespaces', { metadata: { name: 'istio-system' } });
    // Istio's charts, as amesh up (or any installer) applies them.
    const kc = new KubeConfig();
    kc.loadFromFile(api.kubeconfigPath);
    const ambient = generateManifest({ files: [], sets: [parseSetFlag('profile=ambient')] }).sets;
    const rbac = ambient
      .filter((set) => set.component.name === 'Pilot' || set.component.name === 'Cni')
      .flatMap((set) => set.objects)
      .filter((o) => ['ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'].includes(o.kind));
    await applyRbac(kc, rbac);
    await must('POST', '/api/v1/namespaces', { metadata: { name: 'app' } });
    for (const sa of ['ztunnel', 'istio-cni', 'istiod'])
      await must('POST', '/api/v1/namespaces/istio-system/serviceaccounts', { metadata: { name: sa } });
    await must('POST', '/api/v1/namespaces/app/serviceaccounts', { metadata: { name: 'web' } });
    await must('POST', '/api/v1/namespaces/app/pods', {
      metadata: { name: 'web-1' },
      spec: { serviceAccountName: 'web', nodeName: 'node-a', containers: [{ name: 'c', image: 'busybox' }] },
    });
  });
  after(async () => {
    await api.stop();
    await rm(dir, { recursive: true, force: true });
  });

  test('a request without a bearer token, or with a token nobody issued, is 401 with an opaque Status', async () => {
    for (const token of [undefined, 'not-a-token', admin + 'x']) {
      const r = await call('GET', '/api/v1/pods', token);
      assert.equal(r.status, 401);
      assert.equal(r.body.reason, 'Unauthorized');
      assert.equal(r.body.message, 'Unauthorized');
    }
  });

  test('health and version need no credentials (system:public-info-viewer), as kubelet probes /livez and /readyz with none; a bad token is still 401', async () => {
    for (const p of ['/livez', '/readyz', '/healthz', '/version']) {
      const r = await call('GET', p, undefined);
      assert.equal(r.status, 200, p);
      if (p !== '/version') assert.equal(r.body.text, 'ok');
    }
    assert.equal((await call('GET', '/version', 'not-a-token')).status, 401);
    assert.equal((await call('GET', '/api', undefined)).status, 401);
    assert.equal((await call('POST', '/version', undefined, {})).status, 401);
  });

  test("ztunnel's service account may not list secrets; 403 words it as Kubernetes does", async () => {
    const zt = await tokenFor('istio-system', 'ztunnel', {});
    const r = await call('GET', '/api/v1/namespaces/app/secrets', zt);
    assert.equal(r.status, 403);
    assert.equal(
      r.body.message,
      'secrets is forbidden: User "system:serviceaccount:istio-system:ztunnel" cannot list resource "secrets" in API group "" in the namespace "app"',
    );
  });

  test("istio-cni may read pods and annotate them through pods/status, and istiod may create TokenReviews, as Istio's charts grant", async () => {
    const cni = await tokenFor('istio-system', 'istio-cni', {});
    assert.equal((await call('GET', '/api/v1/pods', cni)).status, 200);
    const patch = (sub: string): Promise<number> =>
      new Promise<number>((resolve, reject) => {
        const data = JSON.stringify({ metadata: { annotations: { 'ambient.istio.io/redirection': 'enabled' } } });
        const req = https.request(
          {
            host: '127.0.0.1',
            port: api.port,
            method: 'PATCH',
            path: `/api/v1/namespaces/app/pods/web-1${sub}`,
            ca: api.caCertPem,
            servername: 'localhost',
            headers: { authorization: `Bearer ${cni}`, 'content-type': 'application/merge-patch+json' },
          },
          (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode ?? 0));
          },
        );
        req.on('error', reject);
        req.end(data);
      });
    // Istio's node agent annotates through pods/status, the lower privilege (cni/pkg/util/podutil.go).
    assert.equal(await patch('/status'), 200);
    assert.equal(
      ((await must('GET', '/api/v1/namespaces/app/pods/web-1')).metadata as { annotations: Record<string, string> })
        .annotations['ambient.istio.io/redirection'],
      'enabled',
    );
    assert.equal(await patch(''), 403);
    assert.equal((await call('DELETE', '/api/v1/namespaces/app/pods/web-1', cni)).status, 403);
    const istiod = await tokenFor('istio-system', 'istiod', {});
    const r = await call('POST', '/apis/authentication.k8s.io/v1/tokenreviews', istiod, {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenReview',
      spec: { token: 'x' },
    });
    assert.equal(r.status, 201);
    assert.equal((r.body.status as { authenticated?: boolean }).authenticated ?? false, false);
  });

  test('a subresource serves only its own verbs: DELETE on pods/status is 405 and the pod stays', async () => {
    const r = await call('DELETE', '/api/v1/namespaces/app/pods/web-1/status', admin);
    assert.equal(r.status, 405);
    assert.equal((await call('GET', '/api/v1/namespaces/app/serviceaccounts/web/token', admin)).status, 405);
    assert.equal((await call('GET', '/api/v1/namespaces/app/pods/web-1', admin)).status, 200);
  });

  test("impersonation: the admin acting as ztunnel gets ztunnel's rights, and ztunnel may not impersonate anyone", async () => {
    const asZtunnel = await new Promise<number>((resolve, reject) => {
      const req = https.request(
        {
          host: '127.0.0.1',
          port: api.port,
          method: 'GET',
          path: '/api/v1/namespaces/app/secrets',
          ca: api.caCertPem,
          servername: 'localhost',
          headers: {
            authorization: `Bearer ${admin}`,
            'impersonate-user': 'system:serviceaccount:istio-system:ztunnel',
          },
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        },
      );
      req.on('error', reject);
      req.end();
    });
    assert.equal(asZtunnel, 403);
    const zt = await tokenFor('istio-system', 'ztunnel', {});
    const escalate = await new Promise<{ status: number; message: string }>((resolve, reject) => {
      const req = https.request(
        {
          host: '127.0.0.1',
          port: api.port,
          method: 'GET',
          path: '/api/v1/namespaces/app/secrets',
          ca: api.caCertPem,
          servername: 'localhost',
          headers: {
            authorization: `Bearer ${zt}`,
            'impersonate-user': 'kubernetes-admin',
            'impersonate-group': 'system:masters',
          },
        },
        (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString()));
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, message: (JSON.parse(text) as { message: string }).message }),
          );
        },
      );
      req.on('error', reject);
      req.end();
    });
    assert.equal(escalate.status, 403);
    assert.match(escalate.message, /cannot impersonate resource "users"/);
  });

  test('the default, kube-system and kube-public namespaces may not be deleted', async () => {
    for (const ns of ['default', 'kube-system', 'kube-public']) {
      const r = await call('DELETE', `/api/v1/namespaces/${ns}`, admin);
      assert.equal(r.status, 403, ns);
      assert.equal(r.body.message, `namespaces "${ns}" is forbidden: this namespace may not be deleted`);
    }
  });

  test('TokenReview refuses wrong-audience, expired, foreign-key and deleted-pod tokens', async () => {
    const pod = await must('GET', '/api/v1/namespaces/app/pods/web-1');
    const bound = await tokenFor('app', 'web', {
      audiences: ['istio-ca'],
      boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'web-1', uid: (pod.metadata as { uid: string }).uid },
    });
    assert.equal((await review(bound)).authenticated, true);
    assert.equal((await review(bound, ['other'])).authenticated ?? false, false);

    const key = await importPKCS8(await readFile(path.join(dir, 'data', 'pki', 'sa.key'), 'utf8'), 'ES256');
    const claims = JSON.parse(Buffer.from(bound.split('.')[1] ?? '', 'base64url').toString()) as Record<
      string,
      unknown
    >;
    const header = JSON.parse(Buffer.from(bound.split('.')[0] ?? '', 'base64url').toString()) as { kid?: string };
    const now = Math.floor(Date.now() / 1000);
    const expired = await new SignJWT({ ...claims, iat: now - 7200, nbf: now - 7200, exp: now - 3600 })
      .setProtectedHeader({ alg: 'ES256', kid: header.kid ?? '' })
      .sign(key);
    assert.equal((await review(expired)).authenticated ?? false, false);

    const { privateKey } = await crypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, [
      'sign',
      'verify',
    ]);
    const foreign = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'ES256', kid: header.kid ?? '' })
      .sign(privateKey);
    assert.equal((await review(foreign)).authenticated ?? false, false);

    // Confirmed at once, as its kubelet would once the pod's containers are gone.
    await must('DELETE', '/api/v1/namespaces/app/pods/web-1?gracePeriodSeconds=0');
    assert.equal((await review(bound)).authenticated ?? false, false);
  });
});
