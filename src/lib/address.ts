import { MeshError } from './errors.js';
import { parseHostPort } from './ip.js';

export interface ListenAddress {
  readonly host: string;
  readonly port: number;
}

/** Parses a `host:port` listen address flag or env var (port 0 allowed for tests). */
export function parseListenAddress(s: string, what: string): ListenAddress {
  const withPort = /:0$/.test(s) ? s.replace(/:0$/, ':1') : s;
  const hp = parseHostPort(withPort);
  if (hp === undefined)
    throw new MeshError('AMESH_ERR_CONFIG', `${what}: "${s}" is not host:port (for example 127.0.0.1:15000)`);
  return { host: hp.host, port: withPort === s ? hp.port : 0 };
}
