import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CertificateAuthority } from '../../lib/pki/certificate-authority.js';
import { createKeyAndCsr } from '../../lib/pki/csr.js';
import { parseIdentity } from '../../lib/spiffe.js';
import { refreshAt, workloadCertificateFromChain, type WorkloadCertificate } from './workload-certificate.js';

const URI = 'spiffe://cluster.local/ns/a/sa/client';

async function issue(ttlSeconds: number): Promise<WorkloadCertificate> {
  const ca = await CertificateAuthority.selfSigned('cluster.local');
  const { keyPem, csrPem } = await createKeyAndCsr(URI);
  return workloadCertificateFromChain(parseIdentity(URI), keyPem, await ca.sign(csrPem, URI, ttlSeconds));
}

test('a day-long certificate is refreshed at half its lifetime, counted from its backdated notBefore (ztunnel refresh_at)', async () => {
  const c = await issue(24 * 3600);
  const nb = c.notBefore.getTime();
  assert.equal(refreshAt(c, Date.now()), nb + (c.notAfter.getTime() - nb) / 2);
});

test('a certificate already past its half-life on arrival (short SECRET_TTL, 2 min backdating) is refreshed halfway through what is left, not at once', async () => {
  const c = await issue(4);
  const now = Date.now();
  const at = refreshAt(c, now);
  assert.ok(at > now, 'a refresh in the past would loop at once, CSR after CSR');
  assert.ok(at < c.notAfter.getTime(), 'and still before it expires');
  assert.equal(at, now + (c.notAfter.getTime() - now) / 2);
});
