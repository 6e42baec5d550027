/**
 * CoreDNS's cache plugin as kubeadm's Corefile configures it (`cache 30 { disable success <domain>; disable denial
 * <domain> }`, coredns plugin/cache `cache.go`, `item.go`, plugin/pkg/dnsutil `ttl.go`):
 *
 * - Every response leaving the server has all its TTLs set to one value: the lowest TTL of its records, at most
 *   30 s and at least 5 s (5 s for a response without records).
 * - Answers and denials (NXDOMAIN, or NOERROR without answers, each only with the zone's SOA) of names outside the
 *   cluster domain are kept that long, keyed by name (case-insensitively), type, class and the DO and CD bits;
 *   from the cache they come authoritative, every TTL what is left of it. The cluster domain's records are never
 *   kept: they change with the cluster.
 */
import { CHECKING_DISABLED, DNSSEC_OK, type Answer } from 'dns-packet';
import { RCODE, type DnsAnswer, type DnsQuery } from '../ztunnel/dns/dns-message.js';
import { hasDomain, labelsOf, type Labels } from '../ztunnel/dns/dns-name.js';

/** The cache plugin's bounds with `cache 30`: positive and negative TTL at most 30 s, at least 5 s (`minTTL`, `minNTTL`). */
const MAX_TTL_SECONDS = 30;
const MIN_TTL_SECONDS = 5;
/** Entries kept at most (the plugin's `defaultCap` per cache); the oldest goes first. */
const CAPACITY = 10_000;

interface Entry {
  readonly answer: DnsAnswer;
  readonly stored: number;
  readonly ttl: number;
}

export class DnsAnswerCache {
  private readonly entries = new Map<string, Entry>();
  private readonly except: Labels;

  /** `domain`: the cluster domain, never kept; `now`: milliseconds, as Date.now. */
  constructor(
    domain: string,
    private readonly now: () => number,
  ) {
    this.except = labelsOf(domain);
  }

  /** The kept answer to `q` with its TTLs counted down, or undefined when there is none (or it expired). */
  get(q: DnsQuery): DnsAnswer | undefined {
    const key = keyOf(q);
    const e = this.entries.get(key);
    if (e === undefined) return undefined;
    const left = e.ttl - Math.floor((this.now() - e.stored) / 1000);
    if (left <= 0) {
      this.entries.delete(key);
      return undefined;
    }
    return { ...withTtl(e.answer, left), authoritative: true };
  }

  /** `a` with its TTLs capped as the plugin caps every response, kept for `q` when it may be. */
  put(q: DnsQuery, a: DnsAnswer): DnsAnswer {
    const ttl = responseTtl(a);
    const capped = withTtl(a, ttl);
    const name = labelsOf(q.question.name);
    const inCluster =
      (name.length === this.except.length && name.every((l, i) => l === this.except[i])) ||
      hasDomain(name, this.except);
    if (!inCluster && cacheable(a)) {
      const key = keyOf(q);
      this.entries.delete(key);
      if (this.entries.size >= CAPACITY) this.entries.delete(this.entries.keys().next().value!);
      this.entries.set(key, { answer: capped, stored: this.now(), ttl });
    }
    return capped;
  }
}

function keyOf(q: DnsQuery): string {
  const doBit = ((q.edns?.flags ?? 0) & DNSSEC_OK) !== 0;
  const cd = (q.echoFlags & CHECKING_DISABLED) !== 0;
  return `${q.question.name.toLowerCase()}\u0000${q.question.type}\u0000${q.question.class ?? 'IN'}\u0000${doBit}\u0000${cd}`;
}

function records(a: DnsAnswer): Answer[] {
  return [...a.answers, ...(a.authorities ?? []), ...a.additionals].filter((r) => r.type !== 'OPT');
}

/** The lowest TTL of the response's records within [5, 30]; 5 when it has none or is an error (`MinimalTTLWithMaximum`). */
function responseTtl(a: DnsAnswer): number {
  const all = records(a);
  if ((a.rcode !== RCODE.NOERROR && a.rcode !== RCODE.NXDOMAIN) || all.length === 0) return MIN_TTL_SECONDS;
  const lowest = Math.min(MAX_TTL_SECONDS, ...all.map((r) => ('ttl' in r ? (r.ttl ?? 0) : 0)));
  return Math.max(lowest, MIN_TTL_SECONDS);
}

/** An answer, or a denial that carries its zone's SOA (`cache.go` `key`). */
function cacheable(a: DnsAnswer): boolean {
  const soa = (a.authorities ?? []).some((r) => r.type === 'SOA');
  if (a.rcode === RCODE.NXDOMAIN) return soa;
  return a.rcode === RCODE.NOERROR && (a.answers.length > 0 || soa);
}

function withTtl(a: DnsAnswer, ttl: number): DnsAnswer {
  const set = (rs: readonly Answer[]): Answer[] => rs.map((r) => (r.type === 'OPT' ? r : { ...r, ttl }));
  return {
    ...a,
    answers: set(a.answers),
    ...(a.authorities !== undefined ? { authorities: set(a.authorities) } : {}),
    additionals: set(a.additionals),
  };
}
