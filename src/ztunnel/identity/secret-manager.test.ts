import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { EventEmitter, once } from 'node:events';
import { isMeshError } from '../../lib/errors.js';
import { CertificateAuthority } from '../../lib/pki/certificate-authority.js';
import { csrUriSans } from '../../lib/pki/certificate-authority.js';
import { LogControl } from '../../lib/log.js';
import type { Identity } from '../../lib/spiffe.js';
import type { CaClient } from './ca-client.js';
import { MAX_CONCURRENT_CSRS, SecretManager } from './secret-manager.js';

const log = new LogControl({
  format: 'json',
  level: 'silent',
  component: 't',
  out: new Writable({ write: (_c, _e, cb) => cb() }),
}).scope('identity');
const id = (sa: string): Identity => ({ trustDomain: 'cluster.local', namespace: 'ns', serviceAccount: sa });

/** A CA that holds every CSR until released, recording the order they arrived in. */
class GatedCa implements CaClient {
  readonly order: string[] = [];
  private readonly held: (() => void)[] = [];
  private readonly arrivals = new EventEmitter();
  maxInFlight = 0;
  private inFlight = 0;
  constructor(private readonly ca: CertificateAuthority) {}
  async fetchCertificate(identity: Identity, csrPem: string, ttl: number): Promise<string[]> {
    this.order.push(identity.serviceAccount);
    this.arrivals.emit('csr');
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    await new Promise<void>((r) => this.held.push(r));
    this.inFlight--;
    return this.ca.sign(csrPem, csrUriSans(csrPem)[0]!, ttl);
  }
  releaseAll(): void {
    for (const r of this.held.splice(0)) r();
  }
  /** Frees one slot, so exactly one queued CSR starts next (several at once would race on key generation). */
  releaseOne(): void {
    this.held.shift()?.();
  }
  /** Resolves once `n` CSRs have arrived in all. */
  async arrived(n: number): Promise<void> {
    while (this.order.length < n) await once(this.arrivals, 'csr');
  }
}

test('at most 8 CSRs are in flight, and a certificate a connection waits for jumps the warm-up queue', async () => {
  const gate = new GatedCa(await CertificateAuthority.selfSigned('cluster.local'));
  const sm = new SecretManager(gate, 3600_000, log);
  for (let i = 0; i < 20; i++) sm.prefetch(id(`warm${i}`));
  await gate.arrived(MAX_CONCURRENT_CSRS);
  const urgent = sm.fetch(id('urgent'));
  gate.releaseOne();
  await gate.arrived(MAX_CONCURRENT_CSRS + 1);
  assert.equal(gate.order[MAX_CONCURRENT_CSRS], 'urgent', `order: ${gate.order.join(',')}`);
  while (gate.order.length < 21) {
    gate.releaseAll();
    await gate.arrived(gate.order.length + 1);
  }
  gate.releaseAll();
  assert.equal((await urgent).identity.serviceAccount, 'urgent');
  assert.equal(gate.maxInFlight, MAX_CONCURRENT_CSRS);
  assert.equal(gate.order.length, 21);
  sm.stop();
});

/** A CA that is down (every CSR fails at once) until brought up, counting calls. */
class OutageCa implements CaClient {
  up = false;
  calls = 0;
  constructor(private readonly ca: CertificateAuthority) {}
  async fetchCertificate(_identity: Identity, csrPem: string, ttl: number): Promise<string[]> {
    this.calls++;
    if (!this.up) throw new Error('UNAVAILABLE: istiod is down');
    return this.ca.sign(csrPem, csrUriSans(csrPem)[0]!, ttl);
  }
}

const failedOnce = (sm: SecretManager): Promise<unknown> => once(sm, 'failed');

test('a dial that needs a certificate whose fetch failed fails at once with ZT_ERR_CERT_UNAVAILABLE, without waiting out the retry', async () => {
  const ca = new OutageCa(await CertificateAuthority.selfSigned('cluster.local'));
  const sm = new SecretManager(ca, 3600_000, log);
  try {
    await assert.rejects(
      sm.fetch(id('web')),
      (e: unknown) => isMeshError(e, 'ZT_ERR_CERT_UNAVAILABLE') && /istiod is down/.test(e.message),
      'the first fetch is waited for and fails with the cause',
    );
    const calls = ca.calls;
    await assert.rejects(
      sm.fetch(id('web')),
      (e: unknown) =>
        isMeshError(e, 'ZT_ERR_CERT_UNAVAILABLE') &&
        /last fetch failed .*istiod is down.*retrying in the background/.test(e.message),
    );
    assert.equal(ca.calls, calls, 'a dial does not trigger a CSR of its own');
  } finally {
    sm.stop();
  }
});

test('when the control plane is back, failed identities are retried at once instead of after their backoff', async () => {
  const ca = new OutageCa(await CertificateAuthority.selfSigned('cluster.local'));
  const sm = new SecretManager(ca, 3600_000, log);
  // The manager's retry timers do not hold the process open; this does, while the test waits on its events.
  const keepAlive = setInterval(() => undefined, 1000);
  try {
    // Three failures: the next retry is now 2s or more away.
    sm.prefetch(id('web'));
    for (let i = 0; i < 3; i++) await failedOnce(sm);
    ca.up = true;
    const updated = once(sm, 'updated');
    sm.retryFailed();
    const [identity] = (await updated) as [string];
    assert.equal(identity, 'spiffe://cluster.local/ns/ns/sa/web');
    assert.equal((await sm.fetch(id('web'))).identity.serviceAccount, 'web');
    assert.equal(ca.calls, 4);
  } finally {
    clearInterval(keepAlive);
    sm.stop();
  }
});

test('a connection waiting for a first certificate is settled when its workload leaves the node, and when ztunnel stops', async () => {
  const gate = new GatedCa(await CertificateAuthority.selfSigned('cluster.local'));
  const sm = new SecretManager(gate, 3600_000, log);
  const leaving = sm.fetch(id('leaving'));
  const staying = sm.fetch(id('staying'));
  sm.retain(new Set(['spiffe://cluster.local/ns/ns/sa/staying']));
  await assert.rejects(
    leaving,
    (e: unknown) =>
      isMeshError(e, 'ZT_ERR_CERT_UNAVAILABLE') && /no workload on this node uses the identity/.test(e.message),
  );
  sm.stop();
  await assert.rejects(
    staying,
    (e: unknown) => isMeshError(e, 'ZT_ERR_CERT_UNAVAILABLE') && /ztunnel is stopping/.test(e.message),
  );
  gate.releaseAll();
});
