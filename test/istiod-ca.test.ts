import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SignJWT, generateKeyPair } from 'jose';
import { createKeyAndCsr } from '../src/lib/pki/csr.js';
import { isMeshError } from '../src/lib/errors.js';
import { parseIdentity } from '../src/lib/spiffe.js';
import type { Istiod } from '../src/istiod/istiod.js';
import { startIstiod } from './helpers/in-process.js';
import { IstioCaClient } from '../src/ztunnel/identity/istio-ca-client.js';

const MANIFESTS = `
apiVersion: v1
kind: Pod
metadata: {name: echo-0, namespace: backend}
spec: {serviceAccountName: echo, nodeName: node1}
status: {phase: Running, podIP: 127.0.60.2}
---
apiVersion: v1
kind: Pod
metadata: {name: web-0, namespace: frontend}
spec: {serviceAccountName: web, nodeName: node2}
status: {phase: Running, podIP: 127.0.60.1}
`;

describe('istiod CA: CreateCertificate over gRPC/TLS', () => {
  let dir: string;
  let ist: Istiod;
  let root: string;

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'amesh-istiod-'));
    await writeFile(path.join(dir, 'pods.yaml'), MANIFESTS);
    ist = await startIstiod(dir, path.join(dir, 'state'));
    root = await readFile(ist.rootCertPath, 'utf8');
  });
  after(async () => {
    await ist.stop();
    await rm(dir, { recursive: true, force: true });
  });

  /** Asks for `uri` with `token`, optionally impersonating; the CSR asks for `csrUri` (default: `uri`). */
  async function request(token: string, uri: string, o: { impersonate?: boolean; csrUri?: string } = {}): Promise<string[]> {
    const tokenFile = path.join(dir, `token-${Math.random()}`);
    await writeFile(tokenFile, token);
    const client = new IstioCaClient({ address: `https://localhost:${ist.ports.grpc}`, rootPem: root, tokenFile, clusterId: 'Kubernetes', impersonate: o.impersonate === true });
    try {
      const { csrPem } = await createKeyAndCsr(o.csrUri ?? uri);
      return await client.fetchCertificate(parseIdentity(uri), csrPem, 3600);
    } finally {
      client.close();
    }
  }

  const token = (ns: string, sa: string, extra: { audience?: string; node?: string; ttlSeconds?: number } = {}): Promise<string> =>
    ist.issuer.issue({ namespace: ns, serviceAccount: sa, audience: extra.audience ?? 'istio-ca', node: extra.node, ttlSeconds: extra.ttlSeconds });

  test("a workload gets a certificate for its own identity: URI SAN, leaf/intermediate/root chain, verified to istiod's root", async () => {
    const chain = await request(await token('frontend', 'web'), 'spiffe://cluster.local/ns/frontend/sa/web');
    assert.equal(chain.length, 3);
    const leaf = new X509Certificate(chain[0]!);
    const inter = new X509Certificate(chain[1]!);
    const rootCert = new X509Certificate(chain[2]!);
    assert.equal(leaf.subjectAltName, 'URI:spiffe://cluster.local/ns/frontend/sa/web');
    assert.ok(leaf.verify(inter.publicKey) && leaf.checkIssued(inter));
    assert.ok(inter.verify(rootCert.publicKey));
    assert.equal(rootCert.fingerprint256, new X509Certificate(root).fingerprint256, 'last element is the published root');
  });

  const refused = async (p: Promise<unknown>, code: 'UNAUTHENTICATED' | 'INVALID_ARGUMENT', why: RegExp): Promise<void> => {
    await assert.rejects(p, (e: unknown) => {
      assert.ok(isMeshError(e, 'ZT_ERR_CERT_UNAVAILABLE'), String(e));
      assert.match(e.message, new RegExp(`: ${code}: `));
      assert.match(e.message, why);
      return true;
    });
  };

  test('a token with the wrong audience is refused with UNAUTHENTICATED', async () => {
    await refused(request(await token('frontend', 'web', { audience: 'kubernetes' }), 'spiffe://cluster.local/ns/frontend/sa/web'), 'UNAUTHENTICATED', /audience/);
  });

  test('a token from an unknown issuer is refused with UNAUTHENTICATED', async () => {
    const { privateKey } = await generateKeyPair('ES256');
    const foreign = await new SignJWT({}).setProtectedHeader({ alg: 'ES256' }).setIssuer('https://evil.example').setSubject('system:serviceaccount:frontend:web').setAudience('istio-ca').setExpirationTime('1h').sign(privateKey);
    await refused(request(foreign, 'spiffe://cluster.local/ns/frontend/sa/web'), 'UNAUTHENTICATED', /unknown issuer/);
  });

  test('an expired token is refused with UNAUTHENTICATED', async () => {
    const t = await token('frontend', 'web', { ttlSeconds: 1 });
    await new Promise((r) => setTimeout(r, 2100));
    await refused(request(t, 'spiffe://cluster.local/ns/frontend/sa/web'), 'UNAUTHENTICATED', /expired/);
  });

  test('impersonation by an account not in CA_TRUSTED_NODE_ACCOUNTS is refused with UNAUTHENTICATED', async () => {
    await refused(request(await token('frontend', 'web', { node: 'node1' }), 'spiffe://cluster.local/ns/backend/sa/echo', { impersonate: true }), 'UNAUTHENTICATED', /CA_TRUSTED_NODE_ACCOUNTS/);
  });

  test("the trusted node account may impersonate only service accounts with a pod on the caller's node", async () => {
    const zt = await token('istio-system', 'ztunnel', { node: 'node1' });
    const chain = await request(zt, 'spiffe://cluster.local/ns/backend/sa/echo', { impersonate: true });
    assert.equal(new X509Certificate(chain[0]!).subjectAltName, 'URI:spiffe://cluster.local/ns/backend/sa/echo');
    await refused(request(zt, 'spiffe://cluster.local/ns/frontend/sa/web', { impersonate: true }), 'UNAUTHENTICATED', /no pod of frontend\/web runs on node node1/);
  });

  test('a CSR whose SAN is not the identity being signed for is refused with INVALID_ARGUMENT', async () => {
    await refused(request(await token('frontend', 'web'), 'spiffe://cluster.local/ns/frontend/sa/web', { csrUri: 'spiffe://cluster.local/ns/kube-system/sa/admin' }), 'INVALID_ARGUMENT', /may only get spiffe:\/\/cluster\.local\/ns\/frontend\/sa\/web/);
  });

  test('the CA counts issued and refused CSRs in its metrics', async () => {
    const m = await (await fetch(`http://127.0.0.1:${ist.ports.monitoring}/metrics`)).text();
    assert.match(m, /citadel_server_success_cert_issuance_count [1-9]/);
    assert.match(m, /citadel_server_authentication_failure_count [1-9]/);
  });
});
