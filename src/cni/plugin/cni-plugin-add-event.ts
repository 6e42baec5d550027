/**
 * The body of `POST /cmdadd` on the node agent's `pluginevent.sock`, byte-compatible with Istio's
 * (istio cni/pkg/nodeagent/cni-watcher.go `CNIPluginAddEvent` and `IPConfig`, built in cni/pkg/plugin/cnieventclient.go
 * PushCNIEvent): Go's default JSON of those structs, so the field names are capitalised, an address is a Go
 * `net.IPNet` (`{"IP":"10.244.1.5","Mask":"////AA=="}`, the mask as base64 bytes), a missing gateway is `""`, a
 * missing interface index `null`, and no IPs at all is `null`.
 */
import { formatIp } from '../../lib/ip.js';
import type { PrevResultIp } from './prev-result.js';

export interface GoIpConfig {
  readonly Interface: number | null;
  readonly Address: { readonly IP: string; readonly Mask: string };
  readonly Gateway: string;
}

export interface CniPluginAddEvent {
  readonly Netns: string;
  readonly PodName: string;
  readonly PodNamespace: string;
  readonly IPs: readonly GoIpConfig[] | null;
}

/** Go's net.IP String(): an IPv4-mapped IPv6 address prints as IPv4; other IPv6 as RFC 5952. */
function goIpString(b: Buffer): string {
  const mapped = b.length === 16 && b.subarray(0, 10).every((x) => x === 0) && b[10] === 0xff && b[11] === 0xff;
  return formatIp(mapped ? b.subarray(12) : b)!;
}

/** Go's net.CIDRMask(prefix, bits): `prefix` one bits, as many bytes as the address has. */
function mask(prefixLength: number, bytes: number): Buffer {
  const m = Buffer.alloc(bytes);
  for (let i = 0; i < prefixLength; i++) m[i >> 3]! |= 0x80 >> (i & 7);
  return m;
}

export function cniPluginAddEvent(netns: string, podName: string, podNamespace: string, ips: readonly PrevResultIp[]): CniPluginAddEvent {
  return {
    Netns: netns,
    PodName: podName,
    PodNamespace: podNamespace,
    IPs:
      ips.length === 0
        ? null
        : ips.map((ip) => ({
            Interface: ip.interface ?? null,
            Address: { IP: goIpString(ip.address), Mask: mask(ip.prefixLength, ip.address.length).toString('base64') },
            Gateway: ip.gateway === undefined ? '' : goIpString(ip.gateway),
          })),
  };
}
