import net from 'node:net';
import { lookup } from 'node:dns/promises';
import { describeError, MeshError } from '../../lib/errors.js';
import { canonicalIp, formatHostPort, formatIp, formatRemote } from '../../lib/ip.js';
import { SOCKS5_PORT } from '../../lib/istio-ports.js';
import type { ProxyContext } from './proxy-context.js';
import { APP_SERVER_OPTIONS } from './socket-factory.js';
import { failureKind, type Outbound, type OutboundFailure } from './outbound.js';

/** A client that has not finished the SOCKS5 handshake in this long is dropped. */
export const HANDSHAKE_TIMEOUT_MS = 10_000;
/** Longest possible request: 4 + 1 + 255 (domain) + 2; greeting at most 2 + 255. */
const MAX_HANDSHAKE_BYTES = 1024;

/** RFC 1928 reply codes. */
const REP: Record<OutboundFailure | 'ok' | 'command' | 'atyp', number> = {
  ok: 0x00,
  error: 0x01,
  denied: 0x02,
  unreachable: 0x04,
  refused: 0x05,
  command: 0x07,
  atyp: 0x08,
};

/** A parse step: need more bytes, a protocol error (with the reply to send, if RFC 1928 has one), or a value. */
export type Parse<T> = { t: 'more' } | { t: 'bad'; why: string; rep?: number } | { t: 'ok'; value: T; used: number };

/** A domain name as a SOCKS5 client may send it: letters, digits, `-`, `_` and dots. */
const DOMAIN = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*\.?$/;

/** The greeting: version 5, then the offered authentication methods. */
export function parseGreeting(b: Buffer): Parse<number[]> {
  if (b.length < 2) return { t: 'more' };
  if (b[0] !== 0x05) return { t: 'bad', why: `not SOCKS5 (version byte ${b[0]})` };
  const n = b[1]!;
  if (b.length < 2 + n) return { t: 'more' };
  return { t: 'ok', value: [...b.subarray(2, 2 + n)], used: 2 + n };
}

export type Target = { host: string; port: number; domain: boolean };

/** The request: CONNECT only, to an IPv4 or IPv6 address or a domain name. */
export function parseRequest(b: Buffer): Parse<Target> {
  if (b.length < 5) return { t: 'more' };
  if (b[0] !== 0x05) return { t: 'bad', why: `bad request version ${b[0]}` };
  if (b[1] !== 0x01) return { t: 'bad', why: `command ${b[1]} is not CONNECT`, rep: REP.command };
  if (b[2] !== 0x00) return { t: 'bad', why: `reserved byte is ${b[2]}, not 0`, rep: REP.error };
  const atyp = b[3];
  let addrLen: number;
  let start = 4;
  if (atyp === 0x01) addrLen = 4;
  else if (atyp === 0x04) addrLen = 16;
  else if (atyp === 0x03) {
    addrLen = b[4]!;
    start = 5;
  } else return { t: 'bad', why: `address type ${atyp} is not supported`, rep: REP.atyp };
  const end = start + addrLen + 2;
  if (b.length < end) return { t: 'more' };
  const raw = b.subarray(start, start + addrLen);
  let host: string;
  if (atyp === 0x03) {
    host = raw.toString('latin1');
    if (!DOMAIN.test(host))
      return { t: 'bad', why: `domain name ${JSON.stringify(host)} is not a hostname`, rep: REP.unreachable };
  } else host = formatIp(raw)!; // 4 or 16 bytes: always an address
  const port = b.readUInt16BE(start + addrLen);
  if (port === 0) return { t: 'bad', why: 'port 0', rep: REP.unreachable };
  return { t: 'ok', value: { host, port, domain: atyp === 0x03 }, used: end };
}

function reply(rep: number): Buffer {
  return Buffer.from([0x05, rep, 0x00, 0x01, 0, 0, 0, 0, 0, 0]);
}

/**
 * SOCKS5 outbound capture on `<workload IP>:15080`, only with `UNSTABLE_ENABLE_SOCKS5=true` (ztunnel src/config.rs):
 * CONNECT only, no authentication, IPv4/IPv6/domain targets. A domain that names a mesh service resolves to its VIP.
 * Whatever comes through leaves with the workload's identity, so only that workload may use it: ztunnel binds SOCKS5
 * to 127.0.0.1 inside the pod's network namespace; amesh has no namespace per pod, so a client whose source address
 * is not the workload's IP is closed before any SOCKS5 byte is exchanged, and logged.
 */
export class Socks5Listener {
  private server: net.Server | undefined;
  private readonly clients = new Set<net.Socket>();

  constructor(
    private readonly ctx: ProxyContext,
    private readonly uid: string,
    private readonly ip: string,
    private readonly outbound: Outbound,
  ) {}

  get address(): string {
    return formatHostPort(this.ip, SOCKS5_PORT);
  }

  async start(): Promise<void> {
    const server = net.createServer(APP_SERVER_OPTIONS, (s) => this.onClient(s));
    server.on('error', (e) =>
      this.ctx.log.error({ error: describeError(e), addr: this.address }, 'SOCKS5 listener error'),
    );
    await this.ctx.sockets.listen(server, this.ip, SOCKS5_PORT);
    this.server = server;
  }

  close(immediate: boolean): void {
    this.server?.close();
    if (immediate) for (const c of this.clients) c.destroy();
  }

  private onClient(s: net.Socket): void {
    const src = canonicalIp(s.remoteAddress ?? '');
    if (src !== this.ip) {
      const e = new MeshError(
        'ZT_ERR_SOCKS5_FOREIGN_CLIENT',
        `SOCKS5 client ${formatRemote(s)} is not workload ${this.uid} (${this.ip}); only the workload itself may send through its SOCKS5 port`,
      );
      this.ctx.log.warn({ workload: this.uid, src: s.remoteAddress, error: describeError(e) }, 'SOCKS5 client refused');
      s.on('error', () => undefined);
      s.destroy();
      return;
    }
    this.clients.add(s);
    s.once('close', () => this.clients.delete(s));
    s.on('error', () => undefined);
    void this.handshake(s).catch((e: unknown) => {
      this.ctx.log.debug({ src: formatRemote(s), error: describeError(e) }, 'SOCKS5 handshake failed');
      s.destroy();
    });
  }

  private async handshake(s: net.Socket): Promise<void> {
    let buf = Buffer.alloc(0);
    let waiter: (() => void) | undefined;
    const onData = (d: Buffer): void => {
      buf = Buffer.concat([buf, d]);
      waiter?.();
    };
    s.on('data', onData);
    // One close listener for the whole handshake (a client dribbling bytes must not pile up listeners).
    const onClose = (): void => waiter?.();
    s.once('close', onClose);
    const timer = setTimeout(() => s.destroy(), HANDSHAKE_TIMEOUT_MS);
    timer.unref();
    const read = async <T>(parse: (b: Buffer) => Parse<T>): Promise<T> => {
      for (;;) {
        const r = parse(buf);
        if (r.t === 'ok') {
          buf = buf.subarray(r.used);
          return r.value;
        }
        if (r.t === 'bad') {
          if (r.rep !== undefined) s.end(reply(r.rep));
          throw new MeshError('ZT_ERR_SOCKS5_PROTOCOL', r.why);
        }
        if (buf.length > MAX_HANDSHAKE_BYTES) throw new MeshError('ZT_ERR_SOCKS5_PROTOCOL', 'handshake too long');
        if (s.destroyed || s.readableEnded)
          throw new MeshError('ZT_ERR_SOCKS5_PROTOCOL', 'client went away during the handshake');
        await new Promise<void>((resolve) => {
          waiter = resolve;
        });
        waiter = undefined;
      }
    };
    try {
      const methods = await read(parseGreeting);
      if (!methods.includes(0x00)) {
        s.end(Buffer.from([0x05, 0xff]));
        throw new MeshError('ZT_ERR_SOCKS5_PROTOCOL', 'client offers no "no authentication" method');
      }
      s.write(Buffer.from([0x05, 0x00]));
      const target = await read(parseRequest);
      s.off('data', onData);
      s.off('close', onClose);
      s.pause();
      clearTimeout(timer);
      const consumed = s.bytesRead - buf.length;
      let dstIp = target.host;
      if (target.domain) {
        try {
          dstIp = await this.resolve(target.host);
        } catch (e) {
          if (!s.destroyed) s.end(reply(REP.unreachable));
          throw e;
        }
      }
      const src = formatRemote(s);
      let setup;
      try {
        setup = await this.outbound.connect(src, this.ip, dstIp, target.port);
      } catch (e) {
        if (!s.destroyed) s.end(reply(REP[failureKind(e)]));
        return;
      }
      if (s.destroyed) {
        setup.upstream.destroy();
        return;
      }
      s.write(reply(REP.ok));
      if (buf.length > 0) s.unshift(buf);
      this.outbound.run(s, setup, { read: consumed, written: 2 + 10 });
      s.resume();
    } finally {
      clearTimeout(timer);
    }
  }

  private async resolve(host: string): Promise<string> {
    const local = this.ctx.state.workloadByUid(this.uid);
    const svc = this.ctx.state.serviceByHostname(host, local?.namespace ?? '');
    const vip = svc?.vips[0];
    if (vip !== undefined) return vip.slice(vip.indexOf('/') + 1);
    try {
      return (await lookup(host)).address;
    } catch (e) {
      throw new MeshError('ZT_ERR_SOCKS5_PROTOCOL', `cannot resolve ${host}: ${describeError(e)}`);
    }
  }
}
