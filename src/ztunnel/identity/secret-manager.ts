import { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import { Backoff } from '../../lib/backoff.js';
import { describeError, MeshError } from '../../lib/errors.js';
import { createKeyAndCsr } from '../../lib/pki/csr.js';
import { identityToString, type Identity } from '../../lib/spiffe.js';
import type { CaClient } from './ca-client.js';
import { refreshAt, workloadCertificateFromChain, type WorkloadCertificate } from './workload-certificate.js';

/** Retry after a failed fetch: 500ms doubling up to 150s (ztunnel src/identity/manager.rs). */
const BACKOFF_INITIAL_MS = 500;
const BACKOFF_MAX_MS = 150_000;
/** At most this many CSRs in flight (ztunnel's limit, ztunnel `src/identity/manager.rs`). */
export const MAX_CONCURRENT_CSRS = 8;
/** Who is waiting, most urgent first: a connection now, a new local workload, a rotation. */
export const Priority = { RealTime: 0, Warmup: 1, Background: 2 } as const;
type Priority = (typeof Priority)[keyof typeof Priority];
/** Timers cannot exceed 2^31-1 ms; longer waits are re-armed. */
const MAX_TIMER_MS = 2 ** 31 - 1;

type CertState =
  | { t: 'initializing'; waiters: ((c: WorkloadCertificate | Error) => void)[] }
  | { t: 'available'; cert: WorkloadCertificate }
  | {
      t: 'unavailable';
      error: string;
      cert: WorkloadCertificate | undefined;
      waiters: ((c: WorkloadCertificate | Error) => void)[];
    };

/** The certificate a state holds: the current one, or the last one kept through a failed refresh. */
function heldCert(s: CertState): WorkloadCertificate | undefined {
  return s.t === 'initializing' ? undefined : s.cert;
}

/** A state as `/config_dump` and metrics show it. */
function stateLabel(s: CertState): string {
  switch (s.t) {
    case 'initializing':
      return 'Initializing';
    case 'available':
      return 'Available';
    case 'unavailable':
      return `Unavailable: ${s.error}`;
  }
}

interface Entry {
  readonly identity: Identity;
  state: CertState;
  /** The last failed fetch, kept after a later success (for metrics). */
  lastError: { readonly message: string; readonly at: Date } | undefined;
  timer: NodeJS.Timeout | undefined;
  backoff: Backoff;
  fetching: boolean;
  /** Set while waiting for a CSR slot. */
  queued: Priority | undefined;
}

/** One identity's state, for `/config_dump` and metrics. */
export interface CertificateSnapshot {
  readonly identity: string;
  readonly state: string;
  readonly cert: WorkloadCertificate | undefined;
  readonly lastError: { readonly message: string; readonly at: Date } | undefined;
}

/**
 * Per-identity certificates: fetched on first use (or prefetched), refreshed at half-life, kept while still valid
 * when a refresh fails. Emits `updated` with the identity string after every new certificate, so listeners swap
 * their TLS contexts without touching open connections, and `failed` after every failed CSR.
 *
 * A caller never waits out a retry: while an identity has no usable certificate and the last fetch failed, `fetch`
 * fails at once with ZT_ERR_CERT_UNAVAILABLE. Only the first fetch of an identity is waited for, and that wait is
 * settled when the fetch fails, when the identity is dropped (`retain`) or when the manager stops.
 */
export class SecretManager extends EventEmitter<{ updated: [string, WorkloadCertificate]; failed: [string, string] }> {
  private readonly entries = new Map<string, Entry>();
  private stopped = false;
  private inFlight = 0;
  private readonly queue: { key: string; e: Entry }[] = [];

  constructor(
    private readonly ca: CaClient,
    private readonly ttlMs: number,
    private readonly log: Logger,
  ) {
    super();
  }

  /** The current certificate for `id`, waiting for the first fetch if needed. */
  async fetch(id: Identity): Promise<WorkloadCertificate> {
    const key = identityToString(id);
    const e = this.ensure(key, id, Priority.RealTime);
    const s = e.state;
    if (s.t === 'available') return s.cert;
    if (s.t === 'unavailable') {
      if (s.cert !== undefined && s.cert.notAfter.getTime() > Date.now()) return s.cert;
      throw new MeshError(
        'ZT_ERR_CERT_UNAVAILABLE',
        `no certificate for ${key}: the last fetch failed (${s.error}); retrying in the background`,
      );
    }
    return new Promise((resolve, reject) => {
      s.waiters.push((c) => (c instanceof Error ? reject(c) : resolve(c)));
    });
  }

  /** Starts fetching without waiting. */
  prefetch(id: Identity): void {
    this.ensure(identityToString(id), id, Priority.Warmup);
  }

  /** CSRs currently in flight (for tests and debugging). */
  get csrsInFlight(): number {
    return this.inFlight;
  }

  /** Stops refreshing identities not in `keep` (their workloads left this node); whoever waits for one gets an error. */
  retain(keep: ReadonlySet<string>): void {
    for (const [k, e] of this.entries) {
      if (!keep.has(k)) {
        clearTimeout(e.timer);
        this.entries.delete(k);
        this.settleWaiters(
          e,
          new MeshError(
            'ZT_ERR_CERT_UNAVAILABLE',
            `no certificate for ${k}: no workload on this node uses the identity any more`,
          ),
        );
      }
    }
  }

  /**
   * Retries at once, with the backoff reset, every identity whose last fetch failed: the control plane is back
   * (the xDS stream is up again), so waiting out a backoff of up to 150s would only keep workloads without
   * certificates.
   */
  retryFailed(): void {
    for (const [k, e] of this.entries) {
      if (e.state.t !== 'unavailable') continue;
      e.backoff.reset();
      clearTimeout(e.timer);
      this.enqueue(k, e, Priority.Warmup);
    }
  }

  /** For `/config_dump` and metrics: identity, state, the certificate if any and the last failure. */
  snapshot(): CertificateSnapshot[] {
    return [...this.entries.entries()]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([k, e]) => ({
        identity: k,
        state: stateLabel(e.state),
        cert: heldCert(e.state),
        lastError: e.lastError,
      }));
  }

  stop(): void {
    this.stopped = true;
    for (const [k, e] of this.entries) {
      clearTimeout(e.timer);
      this.settleWaiters(e, new MeshError('ZT_ERR_CERT_UNAVAILABLE', `no certificate for ${k}: ztunnel is stopping`));
    }
    this.ca.close?.();
  }

  private settleWaiters(e: Entry, error: MeshError): void {
    if (e.state.t === 'available') return;
    for (const w of e.state.waiters.splice(0)) w(error);
  }

  private ensure(key: string, id: Identity, prio: Priority): Entry {
    let e = this.entries.get(key);
    if (e === undefined) {
      e = {
        identity: id,
        state: { t: 'initializing', waiters: [] },
        lastError: undefined,
        timer: undefined,
        backoff: new Backoff(BACKOFF_INITIAL_MS, BACKOFF_MAX_MS),
        fetching: false,
        queued: undefined,
      };
      this.entries.set(key, e);
      this.enqueue(key, e, prio);
    } else if (e.queued !== undefined && prio < e.queued) {
      e.queued = prio; // a connection now waits for a certificate that was only being warmed up
    }
    return e;
  }

  private enqueue(key: string, e: Entry, prio: Priority): void {
    if (e.fetching || this.stopped) return;
    if (e.queued === undefined) this.queue.push({ key, e });
    e.queued = Math.min(prio, e.queued ?? prio) as Priority;
    this.pump();
  }

  /** Starts queued CSRs, most urgent first, while fewer than MAX_CONCURRENT_CSRS are in flight. */
  private pump(): void {
    while (this.inFlight < MAX_CONCURRENT_CSRS && this.queue.length > 0 && !this.stopped) {
      let best = 0;
      for (let i = 1; i < this.queue.length; i++) if (this.queue[i]!.e.queued! < this.queue[best]!.e.queued!) best = i;
      const [{ key, e }] = this.queue.splice(best, 1) as [{ key: string; e: Entry }];
      e.queued = undefined;
      if (this.entries.get(key) !== e) continue;
      this.inFlight++;
      void this.refresh(key, e).finally(() => {
        this.inFlight--;
        this.pump();
      });
    }
  }

  private schedule(key: string, e: Entry, at: number): void {
    clearTimeout(e.timer);
    const delay = Math.max(0, at - Date.now());
    e.timer = setTimeout(
      () => {
        if (Date.now() + 5 < at) this.schedule(key, e, at);
        else this.enqueue(key, e, Priority.Background);
      },
      Math.min(delay, MAX_TIMER_MS),
    );
    e.timer.unref();
  }

  private async refresh(key: string, e: Entry): Promise<void> {
    if (e.fetching || this.stopped) return;
    e.fetching = true;
    try {
      const { keyPem, csrPem } = await createKeyAndCsr(key);
      const chain = await this.ca.fetchCertificate(e.identity, csrPem, Math.round(this.ttlMs / 1000));
      const cert = workloadCertificateFromChain(e.identity, keyPem, chain);
      if (this.entries.get(key) !== e) return;
      const waiters = e.state.t === 'available' ? [] : e.state.waiters;
      e.state = { t: 'available', cert };
      e.backoff.reset();
      this.log.debug({ identity: key, expiration: cert.notAfter.toISOString() }, 'certificate issued');
      this.emit('updated', key, cert);
      for (const w of waiters) w(cert);
      this.schedule(key, e, refreshAt(cert, Date.now()));
    } catch (err) {
      if (this.entries.get(key) !== e) return;
      const msg = describeError(err);
      const prev = heldCert(e.state);
      const waiters = e.state.t === 'available' ? [] : e.state.waiters;
      const retry = e.backoff.next();
      e.lastError = { message: msg, at: new Date() };
      this.emit('failed', key, msg);
      const valid = prev !== undefined && prev.notAfter.getTime() > Date.now();
      e.state = { t: 'unavailable', error: msg, cert: valid ? prev : undefined, waiters: valid ? [] : waiters };
      this.log.warn(
        { identity: key, error: msg, retryInMs: retry },
        valid ? 'certificate refresh failed; keeping the still-valid certificate' : 'certificate fetch failed',
      );
      if (valid) for (const w of waiters) w(prev);
      else {
        const failure = new MeshError('ZT_ERR_CERT_UNAVAILABLE', `no certificate for ${key}: ${msg}`);
        for (const w of waiters) w(failure);
        if (e.state.t === 'unavailable') e.state.waiters = [];
      }
      this.schedule(key, e, Math.min(Date.now() + retry, valid ? prev.notAfter.getTime() : Infinity));
    } finally {
      e.fetching = false;
    }
  }
}
