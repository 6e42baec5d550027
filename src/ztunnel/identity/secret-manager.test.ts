import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { CertificateAuthority } from '../../lib/pki/certificate-authority.js';
import { csrUriSans } from '../../lib/pki/certificate-authority.js';
import { LogControl } from '../../lib/log.js';
import type { Identity } from '../../lib/spiffe.js';
import type { CaClient } from './ca-client.js';
import { MAX_CONCURRENT_CSRS, SecretManager } from './secret-manager.js';

const log = new LogControl({ format: 'json', level: 'silent', component: 't', out: new Writable({ write: (_c, _e, cb) => cb() }) }).scope('identity');
const id = (sa: string): Identity => ({ trustDomain: 'cluster.local', namespace: 'ns', serviceAccount: sa });

/** A CA that holds every CSR until released, recording the order they arrived in. */
class GatedCa implements CaClient {
  readonly order: string[] = [];
  private readonly held: (() => void)[] = [];
  maxInFlight = 0;
  private inFlight = 0;
  constructor(private readonly ca: CertificateAuthority) {}
  async fetchCertificate(identity: Identity, csrPem: string, ttl: number): Promise<string[]> {
    this.order.push(identity.serviceAccount);
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    await new Promise<void>((r) => this.held.push(r));
    this.inFlight--;
    return this.ca.sign(csrPem, csrUriSans(csrPem)[0]!, ttl);
  }
  releaseAll(): void {
    for (const r of this.held.splice(0)) r();
  }
}

const settle = (): Promise<void> => new Promise((r) => setTimeout(r, 200));

test('at most 8 CSRs are in flight, and a certificate a connection waits for jumps the warm-up queue', async () => {
  const gate = new GatedCa(await CertificateAuthority.selfSigned('cluster.local'));
  const sm = new SecretManager(gate, 3600_000, log);
  for (let i = 0; i < 20; i++) sm.prefetch(id(`warm${i}`));
  await settle();
  assert.equal(gate.order.length, MAX_CONCURRENT_CSRS);
  const urgent = sm.fetch(id('urgent'));
  gate.releaseAll();
  await settle();
  assert.equal(gate.order[MAX_CONCURRENT_CSRS], 'urgent', `order: ${gate.order.join(',')}`);
  for (let i = 0; i < 5; i++) {
    gate.releaseAll();
    await settle();
  }
  assert.equal((await urgent).identity.serviceAccount, 'urgent');
  assert.equal(gate.maxInFlight, MAX_CONCURRENT_CSRS);
  assert.equal(gate.order.length, 21);
  sm.stop();
});
