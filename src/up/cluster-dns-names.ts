/**
 * The names CoreDNS's kubernetes plugin reads and writes (coredns plugin/kubernetes `parse.go`, `kubernetes.go`
 * `endpointHostname`, plugin/pkg/dnsutil `reverse.go`): a query name below a zone parsed into its request, an
 * endpoint's hostname, and the address a reverse name stands for. Names are label lists, lowercased (`labelsOf`).
 */
import { isIP } from 'node:net';
import { canonicalIp } from '../lib/ip.js';
import type { Labels } from '../ztunnel/dns/dns-name.js';

/** What a name below the zone asks for; an absent part is `''`. */
export interface ClusterDnsRequest {
  /** `svc` or `pod`; `''` for the zone itself and for `svc.<zone>` and `pod.<zone>`. */
  readonly podOrSvc: '' | 'svc' | 'pod';
  readonly namespace: string;
  /** The Service's name, or for `pod` the pod's dashed address. */
  readonly service: string;
  /** An endpoint's hostname (`<endpoint>.<service>.<ns>.svc.<zone>`). */
  readonly endpoint: string;
  /** A port's name and protocol (`_<port>._<protocol>.<service>.<ns>.svc.<zone>`), without their underscores. */
  readonly port: string;
  readonly protocol: string;
}

const EMPTY: ClusterDnsRequest = { podOrSvc: '', namespace: '', service: '', endpoint: '', port: '', protocol: '' };

/**
 * The request `relative` (the name's labels above the zone) makes, read right to left as `parseRequest` reads it:
 * `svc`|`pod`, namespace, service, then one more label for an endpoint or two for port and protocol (a leading
 * underscore dropped from each). Undefined for a name the grammar has no place for: another label than `svc` or
 * `pod` next to the zone, or more labels than an SRV name has.
 */
export function parseClusterDnsRequest(relative: Labels): ClusterDnsRequest | undefined {
  if (relative.length === 0 || (relative.length === 1 && (relative[0] === 'svc' || relative[0] === 'pod')))
    return EMPTY;
  const segs = [...relative].reverse();
  const [podOrSvc, namespace = '', service = ''] = segs;
  if (podOrSvc !== 'svc' && podOrSvc !== 'pod') return undefined;
  const rest = segs.slice(3);
  if (rest.length > 2) return undefined;
  const strip = (s: string | undefined): string => (s?.startsWith('_') === true ? s.slice(1) : (s ?? ''));
  return {
    podOrSvc,
    namespace,
    service,
    endpoint: rest.length === 1 ? rest[0]! : '',
    protocol: rest.length === 2 ? strip(rest[0]) : '',
    port: rest.length === 2 ? strip(rest[1]) : '',
  };
}

/**
 * An endpoint's name below its Service: its `hostname`, else its address with dashes for dots (IPv4) or colons
 * (IPv6, a trailing dash completed with `0` so that the label does not end in one).
 */
export function endpointHostname(ip: string, hostname: string | undefined): string {
  if (hostname !== undefined && hostname !== '') return hostname;
  if (ip.includes('.')) return ip.replaceAll('.', '-');
  const dashed = ip.replaceAll(':', '-');
  return dashed.endsWith('-') ? `${dashed}0` : dashed;
}

/**
 * The address a `pods insecure` name stands for (`1-2-3-4.<ns>.pod.<zone>`, `fd00--1.<ns>.pod.<zone>`): three
 * dashes and no double dash make an IPv4 address, anything else is read as IPv6; undefined when that is no address.
 */
export function podAddress(dashed: string): string | undefined {
  const ip =
    dashed.split('-').length === 4 && !dashed.includes('--')
      ? dashed.replaceAll('-', '.')
      : dashed.replaceAll('-', ':');
  return isIP(ip) === 0 || ip.includes('%') ? undefined : ip;
}

const V4_REVERSE = ['in-addr', 'arpa'];
const V6_REVERSE = ['ip6', 'arpa'];

/**
 * The address a reverse name stands for (`4.3.2.1.in-addr.arpa` is 1.2.3.4; `ip6.arpa` takes 32 nibbles),
 * canonical; undefined for a name that is not a whole address.
 */
export function reverseAddress(name: Labels): string | undefined {
  const ends = (suffix: readonly string[]): boolean =>
    name.length > suffix.length && suffix.every((l, i) => name[name.length - suffix.length + i] === l);
  if (ends(V4_REVERSE)) {
    const octets = name.slice(0, -2).reverse();
    return octets.length === 4 && isIP(octets.join('.')) === 4 ? octets.join('.') : undefined;
  }
  if (ends(V6_REVERSE)) {
    const nibbles = name.slice(0, -2).reverse();
    if (nibbles.length !== 32 || !nibbles.every((n) => /^[0-9a-f]$/.test(n))) return undefined;
    const groups = Array.from({ length: 8 }, (_, i) => nibbles.slice(i * 4, i * 4 + 4).join(''));
    return canonicalIp(groups.join(':'));
  }
  return undefined;
}
