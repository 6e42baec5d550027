import { randomInt } from 'node:crypto';
import { MeshError } from '../lib/errors.js';
import { bigIntToIpBytes, formatIp, ipBytes, ipToBigInt, parseCidr } from '../lib/ip.js';
import type { StatusCause } from './api-error.js';
import { ApiError, invalid as invalidObject } from './api-error.js';
import type { KubeObject } from './kube-object.js';
import { goStringSlice, index, invalid } from './validation/field-errors.js';
import { asArray, asObject, asString } from './validation/json-fields.js';
import type { JsonObject } from './validation/json-fields.js';
import { CLUSTER_IP_NONE, serviceType } from './strategies/service.js';

/**
 * Service cluster IPs, allocated as k8s.io/kubernetes `pkg/registry/core/service/ipallocator/bitmap.go` and
 * `storage/alloc.go` do for a single-stack cluster: the network address (and for IPv4 the broadcast address) are
 * never handed out; dynamic allocation picks a random free address in the upper part of the range first,
 * keeping the lower band (`calculateRangeOffset`: 1/16 of the range, 16 to 256 addresses) for explicit
 * `clusterIP`s; an explicit address is honoured when free, and refused with upstream's 422 otherwise. IP
 * families and the family policy are defaulted here (`initIPFamilyFields`) since they depend on the range.
 *
 * The first address of the range belongs to the `kubernetes` Service in `default`, as the API server's own
 * controller assigns it; no other Service gets it. The allocator keeps no state of its own: the HTTP layer
 * rebuilds it from the stored Services at start ({@link ClusterIpAllocator.rebuild}), calls
 * {@link ClusterIpAllocator.allocate} before storing a new Service, {@link ClusterIpAllocator.update} before
 * storing an update, and {@link ClusterIpAllocator.release} after a delete (or when a store write fails).
 */

/** The service CIDR kube-apiserver is usually given (`--service-cluster-ip-range`, kubeadm's default). */
export const DEFAULT_SERVICE_CIDR = '10.96.0.0/16';
/** IPv6 ranges are capped at 65536 addresses, as upstream caps its bitmap. */
const MAX_IPV6_RANGE = 65536;
const RESERVED_BAND = { min: 16, max: 256, step: 16 } as const;

type Family = 'IPv4' | 'IPv6';

/** How many addresses at the bottom of a range are kept for explicit `clusterIP`s (`calculateRangeOffset`). */
function reservedBandSize(rangeSize: bigint): number {
  if (rangeSize <= BigInt(RESERVED_BAND.min)) return 0;
  const band = rangeSize / BigInt(RESERVED_BAND.step);
  if (band < RESERVED_BAND.min) return RESERVED_BAND.min;
  if (band > RESERVED_BAND.max) return RESERVED_BAND.max;
  return Number(band);
}

export class ClusterIpAllocator {
  readonly cidr: string;
  readonly family: Family;
  private readonly first: bigint;
  private readonly size: number;
  private readonly width: number;
  private readonly bandStart: number;
  private readonly used = new Set<number>();

  constructor(cidr: string = DEFAULT_SERVICE_CIDR) {
    const c = parseCidr(cidr);
    if (c === undefined || !cidr.includes('/'))
      throw new MeshError('AMESH_ERR_CONFIG', `service CIDR "${cidr}" is not a CIDR (such as ${DEFAULT_SERVICE_CIDR})`);
    this.width = c.bytes.length;
    this.family = this.width === 4 ? 'IPv4' : 'IPv6';
    const hostBits = this.width * 8 - c.prefix;
    const network = (ipToBigInt(c.bytes) >> BigInt(hostBits)) << BigInt(hostBits);
    const rangeSize = 2n ** BigInt(hostBits);
    let max = rangeSize - 1n - (this.family === 'IPv4' ? 1n : 0n);
    if (this.family === 'IPv6' && max > BigInt(MAX_IPV6_RANGE)) max = BigInt(MAX_IPV6_RANGE);
    this.size = Number(max < 0n ? 0n : max);
    if (this.size < 2)
      throw new MeshError(
        'AMESH_ERR_CONFIG',
        `service CIDR "${cidr}" is too small: it needs room for the kubernetes Service and one more`,
      );
    this.first = network + 1n;
    this.cidr = `${formatIp(bigIntToIpBytes(network, this.width))}/${c.prefix}`;
    this.bandStart = reservedBandSize(rangeSize);
  }

  /** The address reserved for the `kubernetes` Service (the first of the range). */
  get kubernetesServiceIp(): string {
    return this.ipAt(0);
  }

  /** Forgets every allocation and takes those of `services` (all Services in the store). */
  rebuild(services: Iterable<KubeObject>): void {
    this.used.clear();
    for (const svc of services)
      for (const ip of this.clusterIpsOf(svc)) {
        const offset = this.offsetOf(ip);
        if (offset !== undefined) this.used.add(offset);
      }
  }

  isAllocated(ip: string): boolean {
    const offset = this.offsetOf(ip);
    return offset !== undefined && (this.used.has(offset) || offset === 0);
  }

  /** Defaults the IP family fields of a new Service and gives it its cluster IP; throws `ApiError` when refused. */
  allocate(svc: KubeObject): void {
    const spec = this.specOf(svc);
    if (serviceType(spec) === 'ExternalName') return;
    this.initIpFamilyFields(svc, spec);
    const ips = asArray(spec.clusterIPs) ?? [];
    if (ips[0] === CLUSTER_IP_NONE) return;
    const requested = asString(ips[0]) ?? '';
    const ip = requested === '' ? this.allocateNext() : this.allocateSpecific(svc, spec, requested);
    spec.clusterIP = ip;
    spec.clusterIPs = [ip, ...ips.slice(1)];
  }

  /**
   * An update: a Service turning into ExternalName gives its address back, one leaving ExternalName gets one;
   * otherwise the address is unchanged (validation refuses a changed one).
   */
  update(svc: KubeObject, old: KubeObject): void {
    const wasExternal = serviceType(this.specOf(old)) === 'ExternalName';
    const isExternal = serviceType(this.specOf(svc)) === 'ExternalName';
    if (wasExternal && !isExternal) this.allocate(svc);
    else if (!wasExternal && isExternal) this.release(old);
    else if (!isExternal) this.initIpFamilyFields(svc, this.specOf(svc));
  }

  release(svc: KubeObject): void {
    for (const ip of this.clusterIpsOf(svc)) {
      const offset = this.offsetOf(ip);
      if (offset !== undefined && offset !== 0) this.used.delete(offset);
    }
  }

  private specOf(svc: KubeObject): JsonObject {
    const spec = asObject(svc.spec);
    if (spec !== undefined) return spec;
    const created: JsonObject = {};
    svc.spec = created;
    return created;
  }

  private clusterIpsOf(svc: KubeObject): string[] {
    const spec = asObject(svc.spec) ?? {};
    const ips = (asArray(spec.clusterIPs) ?? []).filter((x): x is string => typeof x === 'string');
    if (ips.length > 0) return ips;
    const single = asString(spec.clusterIP);
    return single !== undefined ? [single] : [];
  }

  private ipAt(offset: number): string {
    return formatIp(bigIntToIpBytes(this.first + BigInt(offset), this.width))!;
  }

  private offsetOf(ip: string): number | undefined {
    const b = ipBytes(ip);
    if (b === undefined || b.length !== this.width) return undefined;
    const offset = ipToBigInt(b) - this.first;
    return offset >= 0n && offset < BigInt(this.size) ? Number(offset) : undefined;
  }

  private refuse(svc: KubeObject, causes: StatusCause[]): never {
    throw invalidObject('Service', '', asString(svc.metadata.name) ?? '', causes);
  }

  private isKubernetesService(svc: KubeObject): boolean {
    return svc.metadata.name === 'kubernetes' && svc.metadata.namespace === 'default';
  }

  private allocateSpecific(svc: KubeObject, spec: JsonObject, ip: string): string {
    const offset = this.offsetOf(ip);
    const shown = goStringSlice(asArray(spec.clusterIPs));
    if (offset === undefined)
      this.refuse(svc, [
        invalid(
          'spec.clusterIPs',
          shown,
          `failed to allocate IP ${ip}: the provided IP (${ip}) is not in the valid range. The range of valid IPs is ${this.cidr}`,
        ),
      ]);
    if (this.used.has(offset) || (offset === 0 && !this.isKubernetesService(svc)))
      this.refuse(svc, [
        invalid('spec.clusterIPs', shown, `failed to allocate IP ${ip}: provided IP is already allocated`),
      ]);
    this.used.add(offset);
    return this.ipAt(offset);
  }

  /** A random free address of the upper band, else of the lower band (`AllocationMapWithOffset.AllocateNext`). */
  private allocateNext(): string {
    for (const [lo, hi] of [
      [this.bandStart, this.size],
      [1, this.bandStart],
    ] as const) {
      const n = hi - lo;
      if (n <= 0) continue;
      const start = randomInt(n);
      for (let i = 0; i < n; i++) {
        const offset = lo + ((start + i) % n);
        if (offset === 0 || this.used.has(offset)) continue;
        this.used.add(offset);
        return this.ipAt(offset);
      }
    }
    throw new ApiError('InternalError', 'Internal error occurred: failed to allocate a serviceIP: range is full');
  }

  /** `initIPFamilyFields` for a single-stack cluster of this range's family. */
  private initIpFamilyFields(svc: KubeObject, spec: JsonObject): void {
    const selectorless = Object.keys(asObject(spec.selector) ?? {}).length === 0;
    const headlessSelectorless = spec.clusterIP === CLUSTER_IP_NONE && selectorless;
    if (spec.ipFamilyPolicy === undefined || spec.ipFamilyPolicy === null)
      spec.ipFamilyPolicy = headlessSelectorless ? 'RequireDualStack' : 'SingleStack';
    const policy = asString(spec.ipFamilyPolicy) ?? '';
    const ips = (asArray(spec.clusterIPs) ?? []).map((x) => asString(x) ?? '');
    const families = (asArray(spec.ipFamilies) ?? []).map((x) => asString(x) ?? '');
    const errs: StatusCause[] = [];
    if (policy === 'SingleStack') {
      if (ips.length === 2)
        errs.push(
          invalid(
            'spec.ipFamilyPolicy',
            policy,
            "must be 'RequireDualStack' or 'PreferDualStack' when multiple cluster IPs are specified",
          ),
        );
      if (families.length === 2)
        errs.push(
          invalid(
            'spec.ipFamilyPolicy',
            policy,
            "must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified",
          ),
        );
    }
    ips.forEach((ip, i) => {
      if (ip === CLUSTER_IP_NONE || ip === '' || i < families.length) return;
      const fam: Family = ip.includes(':') ? 'IPv6' : 'IPv4';
      if (fam !== this.family)
        errs.push(invalid(index('spec.clusterIPs', i), goStringSlice(ips), `${fam} is not configured on this cluster`));
      else families.push(fam);
    });
    if (errs.length > 0) this.refuse(svc, errs);
    if (headlessSelectorless) {
      if (families.length === 0) families.push(this.family);
      if (families.length < 2 && policy !== 'SingleStack') families.push(this.family === 'IPv4' ? 'IPv6' : 'IPv4');
      spec.ipFamilies = families;
      return;
    }
    if (policy === 'RequireDualStack')
      errs.push(invalid('spec.ipFamilyPolicy', policy, 'this cluster is not configured for dual-stack services'));
    families.forEach((fam, i) => {
      if (fam !== this.family) errs.push(invalid(index('spec.ipFamilies', i), fam, 'not configured on this cluster'));
    });
    if (errs.length > 0) this.refuse(svc, errs);
    if (families.length === 0) families.push(this.family);
    spec.ipFamilies = families;
  }
}
