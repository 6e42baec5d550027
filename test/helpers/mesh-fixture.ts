import { mkdtemp, rm, writeFile, rename } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import http2, { type ClientHttp2Session } from 'node:http2';
import tls from 'node:tls';
import net from 'node:net';
import { once } from 'node:events';
import { CertificateAuthority, writePluginCaDir } from '../../src/lib/pki/certificate-authority.js';
import { createKeyAndCsr } from '../../src/lib/pki/csr.js';
import { parseIdentity } from '../../src/lib/spiffe.js';
import {
  workloadCertificateFromChain,
  type WorkloadCertificate,
} from '../../src/ztunnel/identity/workload-certificate.js';
import { clientTlsOptions } from '../../src/ztunnel/tls/workload-tls.js';

export interface MeshFixture {
  readonly dir: string;
  readonly ca: string;
  file(name: string): string;
  /** Writes a file atomically (rename), as an editor or a config-map update would. */
  write(name: string, text: string): Promise<void>;
  /** A workload certificate for `uri` from the fixture's CA. */
  cert(uri: string, ttlSeconds?: number): Promise<WorkloadCertificate>;
  cleanup(): Promise<void>;
}

export async function meshFixture(): Promise<MeshFixture> {
  const dir = await mkdtemp(path.join(tmpdir(), 'amesh-test-'));
  const ca = path.join(dir, 'ca');
  await writePluginCaDir(ca);
  const authority = await CertificateAuthority.fromPluginDir(ca);
  return {
    dir,
    ca,
    file: (n) => path.join(dir, n),
    write: async (n, text) => {
      const tmp = path.join(dir, `.${n}.tmp`);
      await writeFile(tmp, text);
      await rename(tmp, path.join(dir, n));
    },
    cert: async (uri, ttl = 3600) => {
      const { keyPem, csrPem } = await createKeyAndCsr(uri);
      return workloadCertificateFromChain(parseIdentity(uri), keyPem, await authority.sign(csrPem, uri, ttl));
    },
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
}

/** An HBONE client session built by hand (for status-code and handshake tests). */
export async function hboneSession(
  host: string,
  cert: WorkloadCertificate,
  expected: string[],
  localAddress?: string,
): Promise<ClientHttp2Session> {
  const tcp = net.connect({ host, port: 15008, localAddress });
  await once(tcp, 'connect');
  return hboneSessionOver(tcp, host, cert, expected);
}

/** The same over a TCP connection to `host:15008` made by the caller (e.g. inside a network namespace). */
export async function hboneSessionOver(
  tcp: net.Socket,
  host: string,
  cert: WorkloadCertificate,
  expected: string[],
): Promise<ClientHttp2Session> {
  const socket = tls.connect({ ...clientTlsOptions(cert, expected), socket: tcp });
  await once(socket, 'secureConnect');
  const s = http2.connect(`https://${net.isIPv6(host) ? `[${host}]` : host}:15008`, { createConnection: () => socket });
  s.on('error', () => undefined);
  await once(s, 'remoteSettings');
  return s;
}

/** Sends a CONNECT (or any method) and returns the response status. */
export async function requestStatus(s: ClientHttp2Session, headers: http2.OutgoingHttpHeaders): Promise<number> {
  const st = s.request(headers, { endStream: false });
  st.on('error', () => undefined);
  const [h] = (await once(st, 'response')) as [http2.IncomingHttpHeaders];
  st.close();
  return Number(h[':status']);
}

export async function waitFor(
  what: string,
  check: () => Promise<boolean> | boolean,
  timeoutMs = 5000,
): Promise<number> {
  const start = Date.now();
  while (Date.now() - start < timeoutMs) {
    if (await check()) return Date.now() - start;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`timed out after ${timeoutMs}ms waiting for ${what}`);
}

/** Writes `data`, half-closes, and collects everything the peer sends until it closes its side. */
export function sendAndCollect(s: net.Socket, data: Buffer | string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    s.on('data', (d: Buffer) => chunks.push(d));
    s.once('error', reject);
    s.once('end', () => resolve(Buffer.concat(chunks)));
    s.resume();
    s.end(data);
  });
}
