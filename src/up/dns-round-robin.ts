/**
 * CoreDNS's loadbalance plugin (kubeadm's Corefile `loadbalance`; coredns plugin/loadbalance `loadbalance.go`): in a
 * NOERROR response each section's A and AAAA records come in random order, so clients spread over a headless
 * Service's endpoints. A section of addresses only is shuffled as it is; any other section is reordered CNAMEs
 * first, then the records that are neither addresses nor MX, then the addresses, then the MX records, each group
 * shuffled apart from the first two.
 */
import { randomInt } from 'node:crypto';
import type { Answer } from 'dns-packet';
import { RCODE, type DnsAnswer } from '../ztunnel/dns/dns-message.js';

/** A random integer in [0, n). */
export type Pick = (n: number) => number;

export function roundRobin(a: DnsAnswer, pick: Pick = randomInt): DnsAnswer {
  if (a.rcode !== RCODE.NOERROR) return a;
  return {
    ...a,
    answers: shuffleSection(a.answers, pick),
    ...(a.authorities !== undefined ? { authorities: shuffleSection(a.authorities, pick) } : {}),
    additionals: shuffleSection(a.additionals, pick),
  };
}

function shuffleSection(rs: readonly Answer[], pick: Pick): Answer[] {
  if (rs.length <= 1) return [...rs];
  const first = rs[0]!.type;
  if ((first === 'A' || first === 'AAAA') && rs.every((r) => r.type === first)) return shuffled(rs, pick);
  const of = (t: (type: string) => boolean): Answer[] => rs.filter((r) => t(r.type));
  const address = (t: string): boolean => t === 'A' || t === 'AAAA';
  return [
    ...of((t) => t === 'CNAME'),
    ...of((t) => t !== 'CNAME' && t !== 'MX' && !address(t)),
    ...shuffled(of(address), pick),
    ...shuffled(
      of((t) => t === 'MX'),
      pick,
    ),
  ];
}

function shuffled(rs: readonly Answer[], pick: Pick): Answer[] {
  const out = [...rs];
  for (let j = 0; j < out.length - 1; j++) {
    const p = j + pick(out.length - j);
    [out[j], out[p]] = [out[p]!, out[j]!];
  }
  return out;
}
