import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createKeyAndCsr } from '../src/lib/pki/csr.js';
import type { Istiod } from '../src/istiod/istiod.js';
import { CLOCK_SKEW_GRACE_MS } from '../src/lib/pki/ca-certificates.js';
import { startIstiod } from './helpers/in-process.js';
import { namespaces, pod } from './helpers/manifests.js';
import { pythonSkip, runPython } from './helpers/python.js';

const skip = pythonSkip('grpc', 'python3-grpcio');

interface Reply {
  code: string;
  details: string;
  chain: string[];
}

describe(
  'istiod CA from python3-grpcio with hand-encoded protobuf (ztunnel `src/identity/caclient.rs` field numbers on the wire)',
  { skip },
  () => {
    let dir: string;
    let ist: Istiod;

    before(async () => {
      dir = await mkdtemp(path.join(tmpdir(), 'amesh-grpcio-'));
      await mkdir(path.join(dir, 'config'));
      await writeFile(
        path.join(dir, 'config', 'pods.yaml'),
        namespaces('backend') +
          pod({
            name: 'echo-0',
            namespace: 'backend',
            serviceAccount: 'echo',
            node: 'node1',
            ip: '127.61.0.2',
            ambient: false,
          }),
      );
      ist = await startIstiod(path.join(dir, 'config'), path.join(dir, 'state'));
    });
    after(async () => {
      await ist.stop();
      await rm(dir, { recursive: true, force: true });
    });

    async function call(token: string, csrUri: string, impersonate?: string): Promise<Reply> {
      const csr = path.join(dir, `csr-${Math.random()}.pem`);
      await writeFile(csr, (await createKeyAndCsr(csrUri)).csrPem);
      const r = await runPython('ca_grpcio.py', [
        `127.0.0.1:${ist.ports.grpc}`,
        ist.rootCertPath,
        token,
        csr,
        ...(impersonate === undefined ? [] : [impersonate]),
      ]);
      assert.equal(r.status, 0, r.stderr);
      return JSON.parse(r.stdout) as Reply;
    }

    test('csr (1), validity_duration (3) and cert_chain (1) round-trip; the chain ends with the root bundle', async () => {
      const r = await call(
        await ist.issuer.issue({ namespace: 'frontend', serviceAccount: 'web', audience: 'istio-ca' }),
        'spiffe://cluster.local/ns/frontend/sa/web',
      );
      assert.equal(r.code, 'OK', r.details);
      assert.equal(r.chain.length, 3);
      const leaf = new X509Certificate(r.chain[0]!);
      assert.equal(leaf.subjectAltName, 'URI:spiffe://cluster.local/ns/frontend/sa/web');
      // notBefore is backdated by Istio's clock-skew grace; notAfter is the requested hour from now.
      const lifetime = (Date.parse(leaf.validTo) - Date.parse(leaf.validFrom) - CLOCK_SKEW_GRACE_MS) / 1000;
      assert.ok(lifetime > 3500 && lifetime < 3700, `validity_duration honoured (${lifetime}s)`);
    });

    test('metadata (4) Struct carries ImpersonatedIdentity; gRPC status codes reach a foreign client', async () => {
      const zt = await ist.issuer.issue({
        namespace: 'istio-system',
        serviceAccount: 'ztunnel',
        node: 'node1',
        audience: 'istio-ca',
      });
      const ok = await call(
        zt,
        'spiffe://cluster.local/ns/backend/sa/echo',
        'spiffe://cluster.local/ns/backend/sa/echo',
      );
      assert.equal(ok.code, 'OK', ok.details);
      assert.equal(new X509Certificate(ok.chain[0]!).subjectAltName, 'URI:spiffe://cluster.local/ns/backend/sa/echo');
      const unauth = await call(zt, 'spiffe://cluster.local/ns/other/sa/x', 'spiffe://cluster.local/ns/other/sa/x');
      assert.equal(unauth.code, 'UNAUTHENTICATED');
      assert.match(unauth.details, /impersonation/);
      const badCsr = await call(
        zt,
        'spiffe://cluster.local/ns/backend/sa/wrong',
        'spiffe://cluster.local/ns/backend/sa/echo',
      );
      assert.equal(badCsr.code, 'INVALID_ARGUMENT');
    });
  },
);
