/**
 * The addresses of one prefix that ServiceEntries hold, and the next free one, as istio
 * `pilot/pkg/controllers/ipallocate/ipallocate.go` keeps them (its `prefixUse`): each address in use has one owner
 * (`namespace/name` of a ServiceEntry); addresses outside the prefix are not tracked. Allocation walks up from
 * where the last one ended, wraps once to the first address after the prefix's own, and fails when it comes round
 * again without a free one.
 */
import net from 'node:net';
import { MeshError } from '../lib/errors.js';
import { bigIntToIpBytes, formatIp, ipBytes, ipToBigInt } from '../lib/ip.js';

/** A prefix as configured: the address written (not masked, as Go's `netip.ParsePrefix` keeps it) and its length. */
export interface AllocationPrefix {
  readonly text: string;
  readonly address: bigint;
  readonly bits: number;
  /** 4 or 16 bytes. */
  readonly width: number;
}

/**
 * `text` as an `address/bits` prefix of `family` (4 or 6), or a config error naming `name`. Allocation starts at
 * the address after the one written, which must lie in the prefix.
 */
export function parseAllocationPrefix(text: string, family: 4 | 6, name: string): AllocationPrefix {
  const m = /^([^/]+)\/(\d{1,3})$/.exec(text);
  const written = m?.[1] ?? '';
  if (m === null || net.isIP(written) !== family)
    throw new MeshError(
      'AMESH_ERR_CONFIG',
      `${name}: "${text}" is not an IPv${family} prefix (address/bits, such as ${family === 4 ? '240.240.0.0/16' : '2001:2::/48'})`,
    );
  const width = family === 4 ? 4 : 16;
  const prefix = { text, address: ipToBigInt(ipBytes(written)!), bits: Number(m[2]), width };
  if (prefix.bits > width * 8 || !inPrefix(prefix, prefix.address + 1n))
    throw new MeshError('AMESH_ERR_CONFIG', `${name}: "${text}" leaves no address to allocate after ${written}`);
  return prefix;
}

function inPrefix(p: AllocationPrefix, n: bigint): boolean {
  const host = BigInt(p.width * 8 - p.bits);
  return n < 1n << BigInt(p.width * 8) && n >> host === p.address >> host;
}

export class PrefixAllocator {
  private readonly used = new Map<bigint, string>();
  /** Where the next allocation starts looking; undefined once it ran past the last address. */
  private next: bigint | undefined;
  private readonly first: bigint;

  constructor(readonly prefix: AllocationPrefix) {
    this.first = prefix.address + 1n;
    this.next = this.first;
  }

  /** Whether `ip` (canonical, unmapped) is of this prefix's family and inside it. */
  contains(ip: string): boolean {
    return this.toNumber(ip) !== undefined;
  }

  /**
   * Records `ip` as held by `owner` unless it is held already; says whether it was, and whether by `owner`. An
   * address outside the prefix is neither recorded nor reported.
   */
  markUsed(ip: string, owner: string): { used: boolean; usedByOwner: boolean } {
    const n = this.toNumber(ip);
    if (n === undefined) return { used: false, usedByOwner: false };
    const holder = this.used.get(n);
    if (holder !== undefined) return { used: true, usedByOwner: holder === owner };
    this.used.set(n, owner);
    return { used: false, usedByOwner: false };
  }

  /** The next free address, now held by `owner`; undefined when the prefix is exhausted. */
  allocateNext(owner: string): string | undefined {
    let n = this.next;
    let looped = false;
    if (n === undefined || !inPrefix(this.prefix, n)) {
      looped = true;
      n = this.first;
    }
    while (this.used.has(n)) {
      n += 1n;
      if (!inPrefix(this.prefix, n)) {
        if (looped) return undefined;
        looped = true;
        n = this.first;
      }
    }
    this.used.set(n, owner);
    this.next = inPrefix(this.prefix, n + 1n) ? n + 1n : undefined;
    return this.format(n);
  }

  /** Gives back `ip` if `owner` holds it; the next allocation may take it again. */
  free(ip: string, owner: string): void {
    const n = this.toNumber(ip);
    if (n === undefined || this.used.get(n) !== owner) return;
    this.used.delete(n);
    if (this.next === undefined || n < this.next) this.next = n;
  }

  private toNumber(ip: string): bigint | undefined {
    const b = ipBytes(ip);
    if (b === undefined || b.length !== this.prefix.width) return undefined;
    const n = ipToBigInt(b);
    return inPrefix(this.prefix, n) ? n : undefined;
  }

  private format(n: bigint): string {
    return formatIp(bigIntToIpBytes(n, this.prefix.width))!;
  }
}
