import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SignJWT, generateKeyPair } from 'jose';
import { createKeyAndCsr } from '../src/lib/pki/csr.js';
import { isMeshError } from '../src/lib/errors.js';
import { parseIdentity } from '../src/lib/spiffe.js';
import type { Istiod } from '../src/istiod/istiod.js';
import { startIstiod } from './helpers/in-process.js';
import { namespaces, pod } from './helpers/manifests.js';
import { IstioCaClient } from '../src/ztunnel/identity/istio-ca-client.js';

const MANIFESTS =
  namespaces('backend', 'frontend') +
  pod({
    name: 'echo-0',
    namespace: 'backend',
    serviceAccount: 'echo',
    node: 'node1',
    ip: '127.60.0.2',
    ambient: false,
  }) +
  pod({ name: 'web-0', namespace: 'frontend', serviceAccount: 'web', node: 'node2', ip: '127.60.0.1', ambient: false });

describe('istiod CA: CreateCertificate over gRPC/TLS', () => {
  let dir: string;
  let ist: Istiod;
  let root: string;
  let istiodLog = '';

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'amesh-istiod-'));
    await mkdir(path.join(dir, 'config'));
    await writeFile(path.join(dir, 'config', 'pods.yaml'), MANIFESTS);
    ist = await startIstiod(path.join(dir, 'config'), path.join(dir, 'state'), { log: (l) => (istiodLog += l) });
    root = await readFile(ist.rootCertPath, 'utf8');
  });
  after(async () => {
    await ist.stop();
    await rm(dir, { recursive: true, force: true });
  });

  /** Asks for `uri` with `token`, optionally impersonating; the CSR asks for `csrUri` (default: `uri`). */
  async function request(
    token: string,
    uri: string,
    o: { impersonate?: boolean; csrUri?: string; csr?: (pem: string) => string } = {},
  ): Promise<string[]> {
    const tokenFile = path.join(dir, `token-${Math.random()}`);
    await writeFile(tokenFile, token);
    const client = new IstioCaClient({
      address: `https://localhost:${ist.ports.grpc}`,
      rootPem: root,
      tokenFile,
      clusterId: 'Kubernetes',
      impersonate: o.impersonate === true,
    });
    try {
      const { csrPem } = await createKeyAndCsr(o.csrUri ?? uri);
      return await client.fetchCertificate(parseIdentity(uri), o.csr === undefined ? csrPem : o.csr(csrPem), 3600);
    } finally {
      client.close();
    }
  }

  const token = (
    ns: string,
    sa: string,
    extra: { audience?: string; node?: string; ttlSeconds?: number } = {},
  ): Promise<string> =>
    ist.issuer.issue({
      namespace: ns,
      serviceAccount: sa,
      audience: extra.audience ?? 'istio-ca',
      node: extra.node,
      ttlSeconds: extra.ttlSeconds,
    });

  test("a workload gets a certificate for its own identity: URI SAN, leaf/intermediate/root chain, verified to istiod's root", async () => {
    const chain = await request(await token('frontend', 'web'), 'spiffe://cluster.local/ns/frontend/sa/web');
    assert.equal(chain.length, 3);
    const leaf = new X509Certificate(chain[0]!);
    const inter = new X509Certificate(chain[1]!);
    const rootCert = new X509Certificate(chain[2]!);
    assert.equal(leaf.subjectAltName, 'URI:spiffe://cluster.local/ns/frontend/sa/web');
    assert.ok(leaf.verify(inter.publicKey) && leaf.checkIssued(inter));
    assert.ok(inter.verify(rootCert.publicKey));
    assert.equal(
      rootCert.fingerprint256,
      new X509Certificate(root).fingerprint256,
      'last element is the published root',
    );
  });

  /**
   * The call fails with gRPC `code` and exactly `details`; for authentication failures that is Istio's opaque text,
   * and the reason (`logged`) is in istiod's log only.
   */
  const refused = async (
    p: Promise<unknown>,
    code: 'UNAUTHENTICATED' | 'INVALID_ARGUMENT',
    details: string | RegExp,
    logged?: RegExp,
  ): Promise<void> => {
    const logStart = istiodLog.length;
    await assert.rejects(p, (e: unknown) => {
      assert.ok(isMeshError(e, 'ZT_ERR_CERT_UNAVAILABLE'), String(e));
      const sent = e.message.slice(e.message.indexOf(`: ${code}: `) + code.length + 4);
      if (typeof details === 'string') assert.equal(sent, details);
      else assert.match(sent, details);
      return true;
    });
    if (logged !== undefined) {
      assert.doesNotMatch(details.toString(), logged, 'the reason is not sent to the caller');
      assert.match(istiodLog.slice(logStart), logged, "the reason is in istiod's log");
    }
  };
  const AUTHN = 'request authenticate failure';
  const IMPERSONATION = 'request impersonation authentication failure';
  const WEB = 'spiffe://cluster.local/ns/frontend/sa/web';

  test('a token with the wrong audience is refused with an opaque UNAUTHENTICATED; the audience is only logged', async () => {
    await refused(
      request(await token('frontend', 'web', { audience: 'kubernetes' }), WEB),
      'UNAUTHENTICATED',
      AUTHN,
      /audience \[?\\?"?kubernetes/,
    );
  });

  test('a token from an unknown issuer is refused with an opaque UNAUTHENTICATED; the trusted issuers are not sent back', async () => {
    const { privateKey } = await generateKeyPair('ES256');
    const foreign = await new SignJWT({})
      .setProtectedHeader({ alg: 'ES256' })
      .setIssuer('https://evil.example')
      .setSubject('system:serviceaccount:frontend:web')
      .setAudience('istio-ca')
      .setExpirationTime('1h')
      .sign(privateKey);
    await refused(request(foreign, WEB), 'UNAUTHENTICATED', AUTHN, /unknown issuer.*amesh-istiod-local/);
  });

  test('an expired token (minted already expired) is refused with an opaque UNAUTHENTICATED', async () => {
    await refused(
      request(await token('frontend', 'web', { ttlSeconds: -60 }), WEB),
      'UNAUTHENTICATED',
      AUTHN,
      /expired/,
    );
  });

  test('a bearer token that is not a JWT is refused with an opaque UNAUTHENTICATED', async () => {
    await refused(request('not-a-jwt', WEB), 'UNAUTHENTICATED', AUTHN, /not a JWT/);
  });

  test('impersonation by an account not in CA_TRUSTED_NODE_ACCOUNTS is refused; the trusted accounts are only logged', async () => {
    await refused(
      request(await token('frontend', 'web', { node: 'node1' }), 'spiffe://cluster.local/ns/backend/sa/echo', {
        impersonate: true,
      }),
      'UNAUTHENTICATED',
      IMPERSONATION,
      /CA_TRUSTED_NODE_ACCOUNTS \(istio-system\/ztunnel\)/,
    );
  });

  test("the trusted node account may impersonate only service accounts with a pod on the caller's node", async () => {
    const zt = await token('istio-system', 'ztunnel', { node: 'node1' });
    const chain = await request(zt, 'spiffe://cluster.local/ns/backend/sa/echo', { impersonate: true });
    assert.equal(new X509Certificate(chain[0]!).subjectAltName, 'URI:spiffe://cluster.local/ns/backend/sa/echo');
    await refused(
      request(zt, WEB, { impersonate: true }),
      'UNAUTHENTICATED',
      IMPERSONATION,
      /no pod of frontend\/web runs on node node1/,
    );
  });

  test('a CSR whose SAN is not the identity being signed for is refused with INVALID_ARGUMENT', async () => {
    await refused(
      request(await token('frontend', 'web'), WEB, { csrUri: 'spiffe://cluster.local/ns/kube-system/sa/admin' }),
      'INVALID_ARGUMENT',
      /may only get spiffe:\/\/cluster\.local\/ns\/frontend\/sa\/web/,
    );
  });

  test('a valid CSR followed by 512 KiB of junk, inside or after the PEM block, is refused with INVALID_ARGUMENT', async () => {
    const der = (pem: string): Buffer => Buffer.from(pem.replace(/-----[A-Z ]+-----|\s/g, ''), 'base64');
    const junk = Buffer.alloc(512 * 1024, 0x41);
    const insideDer = (pem: string): string =>
      `-----BEGIN CERTIFICATE REQUEST-----\n${Buffer.concat([der(pem), junk])
        .toString('base64')
        .replace(/.{64}/g, '$&\n')}\n-----END CERTIFICATE REQUEST-----\n`;
    await refused(
      request(await token('frontend', 'web'), WEB, { csr: insideDer }),
      'INVALID_ARGUMENT',
      /followed by 524288 bytes of trailing data/,
    );
    await refused(
      request(await token('frontend', 'web'), WEB, { csr: (pem) => pem + junk.toString() }),
      'INVALID_ARGUMENT',
      /not exactly one PEM/,
    );
  });

  test('the CA caps the lifetime it grants at MAX_WORKLOAD_CERT_TTL (2160h by default)', async () => {
    const tokenFile = path.join(dir, 'token-ttl');
    await writeFile(tokenFile, await token('frontend', 'web'));
    const client = new IstioCaClient({
      address: `https://localhost:${ist.ports.grpc}`,
      rootPem: root,
      tokenFile,
      clusterId: 'Kubernetes',
      impersonate: false,
    });
    try {
      const { csrPem } = await createKeyAndCsr(WEB);
      const leaf = new X509Certificate(
        (await client.fetchCertificate(parseIdentity(WEB), csrPem, 400 * 24 * 3600))[0]!,
      );
      const lifetimeMs = Date.parse(leaf.validTo) - Date.parse(leaf.validFrom);
      assert.equal(
        lifetimeMs,
        2160 * 3600_000 + 2 * 60_000,
        '2160h from now, plus the 2 min the certificate is backdated',
      );
    } finally {
      client.close();
    }
  });

  test('the CA counts issued and refused CSRs in its metrics', async () => {
    const m = await (await fetch(`http://127.0.0.1:${ist.ports.monitoring}/metrics`)).text();
    assert.match(m, /citadel_server_success_cert_issuance_count [1-9]/);
    assert.match(m, /citadel_server_authentication_failure_count [1-9]/);
  });
});
