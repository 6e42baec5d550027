import net from 'node:net';

/** Raw bytes of an IPv4 (4) or IPv6 (16) address, or undefined when `s` is not an IP literal. */
export function ipBytes(s: string): Buffer | undefined {
  const fam = net.isIP(s);
  if (fam === 4) return Buffer.from(s.split('.').map((x) => Number(x)));
  if (fam === 6) {
    const b = Buffer.alloc(16);
    let str = s.toLowerCase();
    // expand "::" and embedded IPv4
    const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(str);
    let tail: number[] = [];
    if (v4 !== null) {
      tail = v4[1]!.split('.').map(Number);
      str = str.slice(0, str.length - v4[1]!.length) + '0:0';
    }
    const [head = '', rest] = str.split('::');
    const h = head === '' ? [] : head.split(':');
    const r = rest === undefined || rest === '' ? [] : rest.split(':');
    const groups = rest === undefined ? h : [...h, ...Array<string>(8 - h.length - r.length).fill('0'), ...r];
    groups.forEach((g, i) => b.writeUInt16BE(parseInt(g, 16), i * 2));
    if (tail.length === 4) Buffer.from(tail).copy(b, 12);
    return b;
  }
  return undefined;
}

/**
 * An IP literal in its one canonical text form, the form Node prints socket addresses in (RFC 5952 for IPv6,
 * `::ffff:a.b.c.d` for mapped IPv4), or undefined when `s` is not one. Addresses are map keys and are compared as
 * text, so every edge (config, xDS, SOCKS5, `:authority`) canonicalizes: `FD00:0::1` is `fd00::1`.
 */
export function canonicalIp(s: string): string | undefined {
  const family = net.isIP(s);
  if (family === 0) return undefined;
  if (family === 4) return s;
  return new net.SocketAddress({ address: s, family: 'ipv6' }).address;
}

/** `canonicalIp`, with an IPv4-mapped IPv6 address as its IPv4 address (Go's `netip.Addr.Unmap`). */
export function canonicalUnmappedIp(s: string): string | undefined {
  const c = canonicalIp(s);
  return c === undefined ? undefined : (/^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(c)?.[1] ?? c);
}

/** The canonical text of a 4- or 16-byte address (see `canonicalIp`), or undefined for any other length. */
export function formatIp(b: Uint8Array): string | undefined {
  if (b.length === 4) return b.join('.');
  if (b.length !== 16) return undefined;
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(((b[i]! << 8) | b[i + 1]!).toString(16));
  return canonicalIp(groups.join(':'));
}

/** A 4- or 16-byte address as one unsigned number, most significant byte first. */
export function ipToBigInt(b: Uint8Array): bigint {
  let v = 0n;
  for (const x of b) v = (v << 8n) | BigInt(x);
  return v;
}

/** The `len` (4 or 16) bytes of the address `v` (`ipToBigInt`'s inverse). */
export function bigIntToIpBytes(v: bigint, len: number): Buffer {
  const b = Buffer.alloc(len);
  for (let i = len - 1; i >= 0; i--) {
    b[i] = Number(v & 0xffn);
    v >>= 8n;
  }
  return b;
}

export function isLoopback(ip: string): boolean {
  const b = ipBytes(ip);
  if (b === undefined) return false;
  if (b.length === 4) return b[0] === 127;
  return b.subarray(0, 15).every((x) => x === 0) && b[15] === 1;
}

/** An IP network (CIDR). A bare address is a /32 or /128. */
export interface Cidr {
  readonly bytes: Buffer;
  readonly prefix: number;
  readonly text: string;
}

export function parseCidr(s: string): Cidr | undefined {
  const slash = s.indexOf('/');
  const addr = slash < 0 ? s : s.slice(0, slash);
  const bytes = ipBytes(addr);
  if (bytes === undefined) return undefined;
  const max = bytes.length * 8;
  let prefix = max;
  if (slash >= 0) {
    const p = s.slice(slash + 1);
    if (!/^\d{1,3}$/.test(p)) return undefined;
    prefix = Number(p);
    if (prefix > max) return undefined;
  }
  return { bytes, prefix, text: `${addr}/${prefix}` };
}

export function cidrContains(c: Cidr, ip: Buffer): boolean {
  if (ip.length !== c.bytes.length) return false;
  let bits = c.prefix;
  for (let i = 0; bits > 0; i++, bits -= 8) {
    const mask = bits >= 8 ? 0xff : (0xff << (8 - bits)) & 0xff;
    if ((ip[i]! & mask) !== (c.bytes[i]! & mask)) return false;
  }
  return true;
}

/** `ip:port`, with brackets for IPv6 (the HBONE `:authority` form, ztunnel `src/proxy/outbound.rs`). */
export function formatHostPort(ip: string, port: number): string {
  return net.isIPv6(ip) ? `[${ip}]:${port}` : `${ip}:${port}`;
}

/** A socket's peer as `ip:port` / `[v6]:port`, as ztunnel logs it; `?` for what the socket no longer knows. */
export function formatRemote(s: {
  readonly remoteAddress?: string | undefined;
  readonly remotePort?: number | undefined;
}): string {
  const ip = s.remoteAddress ?? '?';
  const port = s.remotePort === undefined ? '?' : String(s.remotePort);
  return net.isIPv6(ip) ? `[${ip}]:${port}` : `${ip}:${port}`;
}

/** Parses `host:port` / `[v6]:port` with a port in 1..65535; an IPv6 host comes back in canonical form. */
export function parseHostPort(s: string): { host: string; port: number } | undefined {
  let host: string;
  let portStr: string;
  if (s.startsWith('[')) {
    const end = s.indexOf(']:');
    if (end < 0) return undefined;
    const v6 = canonicalIp(s.slice(1, end));
    if (v6 === undefined || !v6.includes(':')) return undefined;
    host = v6;
    portStr = s.slice(end + 2);
  } else {
    const i = s.lastIndexOf(':');
    if (i <= 0) return undefined;
    host = s.slice(0, i);
    if (host.includes(':')) return undefined;
    portStr = s.slice(i + 1);
  }
  if (!/^\d{1,5}$/.test(portStr)) return undefined;
  const port = Number(portStr);
  if (port < 1 || port > 65535) return undefined;
  if (!/^[A-Za-z0-9.\-:_]+$/.test(host)) return undefined;
  return { host, port };
}
