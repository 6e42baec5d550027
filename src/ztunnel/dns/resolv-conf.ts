import { readFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import { MeshError, describeError } from '../../lib/errors.js';
import { parseHostPort } from '../../lib/ip.js';

/** An upstream DNS server. */
export interface DnsNameserver {
  readonly host: string;
  readonly port: number;
}

/** Where upstream queries go, and how long and how often each is tried (resolv.conf(5) `timeout`, `attempts`). */
export interface UpstreamConfig {
  readonly nameservers: readonly DnsNameserver[];
  readonly timeoutMs: number;
  readonly attempts: number;
}

/** The system's resolver configuration, which ztunnel forwards to (ztunnel `src/dns/server.rs` `SystemForwarder`). */
const RESOLV_CONF = '/etc/resolv.conf';
const DNS_PORT = 53;
/** resolv.conf(5) defaults: 5 s per try, 2 tries. */
const DEFAULT_TIMEOUT_S = 5;
const DEFAULT_ATTEMPTS = 2;

/**
 * The `nameserver` lines and the `timeout:` / `attempts:` options of a resolv.conf. Its `search` list is not used:
 * the client already applied its own, and ztunnel forwards the name as asked. No nameserver is an error, as for
 * hickory's `read_system_conf`.
 */
export function parseResolvConf(text: string, source: string): UpstreamConfig {
  const nameservers: DnsNameserver[] = [];
  let timeoutS = DEFAULT_TIMEOUT_S;
  let attempts = DEFAULT_ATTEMPTS;
  for (const line of text.split('\n')) {
    const [key, ...args] = line
      .replace(/[#;].*/, '')
      .trim()
      .split(/\s+/);
    if (key === 'nameserver' && args[0] !== undefined && isIP(args[0].replace(/%.*/, '')) !== 0)
      nameservers.push({ host: args[0], port: DNS_PORT });
    if (key !== 'options') continue;
    for (const o of args) {
      const [name, value] = o.split(':');
      const n = Number(value);
      if (!Number.isInteger(n) || n < 1) continue;
      if (name === 'timeout') timeoutS = n;
      if (name === 'attempts') attempts = n;
    }
  }
  if (nameservers.length === 0)
    throw new MeshError('ZT_ERR_DNS_RESOLV_CONF', `${source} names no nameserver to forward DNS queries to`);
  return { nameservers, timeoutMs: timeoutS * 1000, attempts };
}

export async function readResolvConf(path = RESOLV_CONF): Promise<UpstreamConfig> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    throw new MeshError('ZT_ERR_DNS_RESOLV_CONF', `cannot read ${path}: ${describeError(e)}`, { cause: e });
  }
  return parseResolvConf(text, path);
}

/** An upstream given as `ip`, `ip:port` or `[v6]:port` (port 53 when left out). */
export function parseNameserver(s: string): DnsNameserver {
  if (isIP(s) !== 0) return { host: s, port: DNS_PORT };
  const hp = parseHostPort(s);
  if (hp === undefined || isIP(hp.host) === 0)
    throw new MeshError('ZT_ERR_DNS_RESOLV_CONF', `DNS upstream "${s}" is not ip, ip:port or [ipv6]:port`);
  return hp;
}
