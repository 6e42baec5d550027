/**
 * A chained plugin's `prevResult` (containernetworking/cni SPEC.md "ADD Success"): the result of the plugins before
 * it, which it must print again, and the pod's IPs, which Istio's plugin forwards to the node agent
 * (istio cni/pkg/plugin/plugin.go parseConfig, cnieventclient.go). Only `ips` is read; every other field passes
 * through as given.
 */
import { configError } from './network-config.js';
import { ipBytes } from '../../lib/ip.js';
import { isRecord } from '../../lib/record.js';
import type { CniVersion } from './cni-version.js';

/** One entry of `prevResult.ips`, parsed as Go's net.ParseCIDR / net.ParseIP read it. */
export interface PrevResultIp {
  /** Index into `interfaces`, when given. */
  readonly interface: number | undefined;
  /** The address itself (not its network), 4 or 16 bytes as written. */
  readonly address: Buffer;
  readonly prefixLength: number;
  readonly gateway: Buffer | undefined;
}

export interface PrevResult {
  readonly fields: Readonly<Record<string, unknown>>;
  readonly ips: readonly PrevResultIp[];
}

/** A literal IP as Go's net.ParseIP takes it: no zone, no brackets. */
function parseIp(s: string): Buffer | undefined {
  return s.includes('%') ? undefined : ipBytes(s);
}

function parseIpConfig(v: unknown, field: string): PrevResultIp {
  if (!isRecord(v)) throw configError(field, 'must be an object');
  const o = v;
  const address = o['address'];
  const slash = typeof address === 'string' ? address.indexOf('/') : -1;
  const bytes = typeof address === 'string' && slash > 0 ? parseIp(address.slice(0, slash)) : undefined;
  const prefix = typeof address === 'string' ? address.slice(slash + 1) : '';
  if (
    typeof address !== 'string' ||
    bytes === undefined ||
    !/^\d{1,3}$/.test(prefix) ||
    Number(prefix) > bytes.length * 8
  ) {
    throw configError(
      `${field}.address`,
      `must be an IP address in CIDR notation, e.g. "10.244.1.5/24" (got ${JSON.stringify(address)})`,
    );
  }
  const iface = o['interface'];
  if (iface !== undefined && iface !== null && !(typeof iface === 'number' && Number.isInteger(iface) && iface >= 0)) {
    throw configError(`${field}.interface`, `must be an index into "interfaces" (got ${JSON.stringify(iface)})`);
  }
  const gw = o['gateway'];
  const gateway = typeof gw === 'string' && gw !== '' ? parseIp(gw) : undefined;
  if (gw !== undefined && gw !== null && gw !== '' && gateway === undefined)
    throw configError(`${field}.gateway`, `must be an IP address (got ${JSON.stringify(gw)})`);
  return {
    interface: typeof iface === 'number' ? iface : undefined,
    address: bytes,
    prefixLength: Number(prefix),
    gateway,
  };
}

export function parsePrevResult(v: unknown): PrevResult {
  if (!isRecord(v))
    throw configError('prevResult', 'must be an object (the result of the plugins before amesh-cni in the chain)');
  const fields = v;
  const ips = fields['ips'];
  if (ips !== undefined && ips !== null && !Array.isArray(ips)) throw configError('prevResult.ips', 'must be a list');
  return Object.freeze({
    fields,
    ips: Object.freeze((ips ?? []).map((ip, i) => parseIpConfig(ip, `prevResult.ips[${i}]`))),
  });
}

/** Results of 0.3.0 to 0.4.0 share one shape, as do 1.0.0 and 1.1.0 (SPEC.md "Released versions"). */
function shapeOf(v: unknown): 'v0' | 'v1' | undefined {
  switch (v) {
    case '0.3.0':
    case '0.3.1':
    case '0.4.0':
      return 'v0';
    case '1.0.0':
    case '1.1.0':
      return 'v1';
    default:
      return undefined;
  }
}

/**
 * What ADD prints: `prevResult` unchanged (this plugin adds no interface, IP or route), labelled with the config's
 * cniVersion when that needs no conversion (the result has no version or one of the same shape); one of another
 * shape is printed as given rather than half-converted. With no `prevResult`, an empty result of the config's version.
 */
export function addResult(prev: PrevResult | undefined, cniVersion: CniVersion): Readonly<Record<string, unknown>> {
  if (prev === undefined) return { cniVersion };
  const own = prev.fields['cniVersion'];
  return own === undefined || shapeOf(own) === shapeOf(cniVersion) ? { ...prev.fields, cniVersion } : prev.fields;
}
