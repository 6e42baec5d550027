/**
 * The body of `POST /cmdadd` on the node agent's `pluginevent.sock`, byte-compatible with Istio's
 * (istio cni/pkg/nodeagent/cni-watcher.go `CNIPluginAddEvent` and `IPConfig`, built in cni/pkg/plugin/cnieventclient.go
 * PushCNIEvent): Go's default JSON of those structs, so the field names are capitalised, an address is a Go
 * `net.IPNet` (`{"IP":"10.244.1.5","Mask":"////AA=="}`, the mask as base64 bytes), a missing gateway is `""`, a
 * missing interface index `null`, and no IPs at all is `null`. The node agent reads it back as Go's json.Unmarshal
 * does: an absent field or `null` is the zero value, a field of the wrong type or an IP that is not one is an error.
 */
import { MeshError } from '../../lib/errors.js';
import { formatIp, ipBytes } from '../../lib/ip.js';
import type { PrevResultIp } from './prev-result.js';
import { isRecord } from '../../lib/record.js';

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

export function cniPluginAddEvent(
  netns: string,
  podName: string,
  podNamespace: string,
  ips: readonly PrevResultIp[],
): CniPluginAddEvent {
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

const badEvent = (field: string, problem: string): MeshError =>
  new MeshError('AGENT_ERR_BAD_EVENT', `CNI plugin event: "${field}" ${problem}`);

function stringField(o: Record<string, unknown>, field: string, at: string): string {
  const v = o[field];
  if (v === undefined || v === null) return '';
  if (typeof v !== 'string') throw badEvent(at, `must be a string (got ${JSON.stringify(v)})`);
  return v;
}

function parseIpConfig(v: unknown, at: string): GoIpConfig {
  if (!isRecord(v)) throw badEvent(at, 'must be an object ({Interface, Address, Gateway})');
  const iface = v['Interface'];
  if (iface !== undefined && iface !== null && !Number.isInteger(iface))
    throw badEvent(`${at}.Interface`, 'must be an integer or null');
  const address = v['Address'] ?? {};
  if (!isRecord(address)) throw badEvent(`${at}.Address`, 'must be an object ({IP, Mask})');
  const ip = stringField(address, 'IP', `${at}.Address.IP`);
  if (ip !== '' && ipBytes(ip) === undefined) throw badEvent(`${at}.Address.IP`, `"${ip}" is not an IP address`);
  const gateway = stringField(v, 'Gateway', `${at}.Gateway`);
  if (gateway !== '' && ipBytes(gateway) === undefined)
    throw badEvent(`${at}.Gateway`, `"${gateway}" is not an IP address`);
  return {
    Interface: (iface as number | undefined) ?? null,
    Address: { IP: ip, Mask: stringField(address, 'Mask', `${at}.Address.Mask`) },
    Gateway: gateway,
  };
}

/** Reads a `/cmdadd` body; throws AGENT_ERR_BAD_EVENT when it is not the event's JSON. */
export function parseCniPluginAddEvent(body: string): CniPluginAddEvent {
  let v: unknown;
  try {
    v = JSON.parse(body);
  } catch (e) {
    throw new MeshError('AGENT_ERR_BAD_EVENT', `CNI plugin event is not JSON: ${(e as Error).message}`);
  }
  if (!isRecord(v))
    throw new MeshError(
      'AGENT_ERR_BAD_EVENT',
      'CNI plugin event must be a JSON object ({Netns, PodName, PodNamespace, IPs})',
    );
  const ips = v['IPs'];
  if (ips !== undefined && ips !== null && !Array.isArray(ips)) throw badEvent('IPs', 'must be a list or null');
  return {
    Netns: stringField(v, 'Netns', 'Netns'),
    PodName: stringField(v, 'PodName', 'PodName'),
    PodNamespace: stringField(v, 'PodNamespace', 'PodNamespace'),
    IPs: ips === undefined || ips === null ? null : (ips as unknown[]).map((ip, i) => parseIpConfig(ip, `IPs[${i}]`)),
  };
}

/** The event's pod IPs as the agent uses them: IPv4-mapped IPv6 as IPv4 (Go's netip Unmap), masks ignored. */
export function addEventPodIps(event: CniPluginAddEvent): string[] {
  return (event.IPs ?? []).filter((c) => c.Address.IP !== '').map((c) => goIpString(ipBytes(c.Address.IP)!));
}
