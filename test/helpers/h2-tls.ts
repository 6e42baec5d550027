import tls from 'node:tls';
import { after, before } from 'node:test';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { H2Session, type H2Role, type H2SessionOptions } from '../../src/h2/h2-session.js';
import { clientTlsOptions, serverTlsOptions } from '../../src/ztunnel/tls/workload-tls.js';
import { DEFAULTS } from '../../src/ztunnel/config.js';
import { meshFixture, type MeshFixture } from './mesh-fixture.js';
import { HpackDecoder } from '../../src/h2/hpack/hpack-decoder.js';
import { HpackEncoder } from '../../src/h2/hpack/hpack-encoder.js';
import { DEFAULT_HEADER_TABLE_SIZE } from '../../src/h2/frame.js';

export const SERVER_ID = 'spiffe://cluster.local/ns/h2/sa/server';
export const CLIENT_ID = 'spiffe://cluster.local/ns/h2/sa/client';
const MAX_HEADER_LIST_SIZE = 64 * 1024;

/** Session options as ztunnel configures them by default, with the HPACK codec. */
export function h2Options(role: H2Role, overrides: Partial<H2SessionOptions> = {}): H2SessionOptions {
  return {
    role,
    streamWindowSize: DEFAULTS.http2StreamWindowSize,
    connectionWindowSize: DEFAULTS.http2ConnectionWindowSize,
    maxFrameSize: DEFAULTS.http2FrameSize,
    maxConcurrentStreams: 100,
    maxHeaderListSize: MAX_HEADER_LIST_SIZE,
    createDecoder: () =>
      new HpackDecoder({ maxTableSize: DEFAULT_HEADER_TABLE_SIZE, maxHeaderListSize: MAX_HEADER_LIST_SIZE }),
    encoder: new HpackEncoder(),
    ...overrides,
  };
}

export interface TlsServer {
  readonly port: number;
  /** The next accepted TLS socket, after its handshake. */
  accepted(): Promise<tls.TLSSocket>;
  close(): Promise<void>;
}

/** A TLS 1.3 server with HBONE's server options (mTLS, ALPN h2) and a workload certificate from the fixture's CA. */
export async function listenHboneTls(fx: MeshFixture, host: string): Promise<TlsServer> {
  const server = tls.createServer(serverTlsOptions(await fx.cert(SERVER_ID)));
  const queue: tls.TLSSocket[] = [];
  const waiting: ((s: tls.TLSSocket) => void)[] = [];
  server.on('secureConnection', (s: tls.TLSSocket) => {
    const w = waiting.shift();
    if (w) w(s);
    else queue.push(s);
  });
  server.listen(0, host);
  await once(server, 'listening');
  return {
    port: (server.address() as AddressInfo).port,
    accepted: () => {
      const s = queue.shift();
      return s ? Promise.resolve(s) : new Promise((resolve) => waiting.push(resolve));
    },
    close: async () => {
      server.close();
      await once(server, 'close');
    },
  };
}

/** An HBONE client TLS connection (TLS 1.3, ALPN h2, the server's SPIFFE identity verified). */
export async function connectHboneTls(fx: MeshFixture, host: string, port: number): Promise<tls.TLSSocket> {
  const s = tls.connect({ ...clientTlsOptions(await fx.cert(CLIENT_ID), [SERVER_ID]), host, port });
  await once(s, 'secureConnect');
  return s;
}

/** Our client session and our server session on one TLS connection. */
export async function sessionPair(
  fx: MeshFixture,
  server: TlsServer,
  host: string,
  client: Partial<H2SessionOptions> = {},
  serverOptions: Partial<H2SessionOptions> = {},
): Promise<{ client: H2Session; server: H2Session; clientSocket: tls.TLSSocket }> {
  const accepted = server.accepted();
  const clientSocket = await connectHboneTls(fx, host, server.port);
  const c = new H2Session(clientSocket, h2Options('client', client));
  const s = new H2Session(await accepted, h2Options('server', serverOptions));
  await once(c, 'remoteSettings');
  return { client: c, server: s, clientSocket };
}

/** Registers before/after hooks for a mesh fixture (CA) and an HBONE TLS server on `host`; read them inside tests. */
export function useHboneTls(host: string): { readonly fx: MeshFixture; readonly server: TlsServer } {
  const ctx = {} as { fx: MeshFixture; server: TlsServer };
  before(async () => {
    ctx.fx = await meshFixture();
    ctx.server = await listenHboneTls(ctx.fx, host);
  });
  after(async () => {
    await ctx.server.close();
    await ctx.fx.cleanup();
  });
  return ctx;
}
