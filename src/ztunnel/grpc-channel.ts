import { readFile } from 'node:fs/promises';
import * as grpc from '@grpc/grpc-js';
import type { DescService } from '@bufbuild/protobuf';
import { MeshError } from '../lib/errors.js';
import { makeTypedClient, type TypedClient } from '../lib/grpc-typed-client.js';
import { ISTIOD_GRPC_PORT } from '../lib/istio-ports.js';

/** The hostname on istiod's certificate that clients verify when they dial an address without one (ztunnel `src/identity/caclient.rs`). */
export const ISTIOD_HOSTNAME = 'istiod.istio-system.svc';

/** XDS_ROOT_CA / CA_ROOT_CA value that means the OS trust store (ztunnel src/config.rs). */
const SYSTEM_ROOTS = 'SYSTEM';

/**
 * grpc-js keeps its own reconnect backoff under ours (default 1s doubling to 120s): while it runs, every call fails
 * at once without dialing, so a ztunnel noticed istiod was back only when that timer allowed. ztunnel's channel
 * (ztunnel src/tls/control.rs) dials afresh for each call and leaves pacing to the xDS and certificate backoffs, so
 * ours stays short and those backoffs govern.
 */
const CHANNEL_INITIAL_RECONNECT_BACKOFF_MS = 100;
const CHANNEL_MAX_RECONNECT_BACKOFF_MS = 1_000;

/**
 * A root CA as ztunnel reads XDS_ROOT_CA / CA_ROOT_CA: `SYSTEM` (the OS trust store, returned as undefined), a PEM
 * given inline, or a file.
 */
export async function readRootCa(v: string, what: string): Promise<string | undefined> {
  if (v === SYSTEM_ROOTS) return undefined;
  if (v.includes('-----BEGIN')) return v;
  try {
    return await readFile(v, 'utf8');
  } catch (e) {
    throw new MeshError(
      'AMESH_ERR_CONFIG',
      `${what}: cannot read ${v}: ${(e as Error).message} (point ${what} at istiod's root-cert.pem, give the PEM itself, or SYSTEM for the OS trust store)`,
    );
  }
}

/**
 * A client of `svc`, its methods typed from the descriptor (`makeTypedClient`), over TLS to `address`
 * (`https://host:port` or `host:port`), verifying the server against `rootPem` (the OS trust store when undefined).
 * The TLS name is the URL's host, or `altHostname` (ztunnel's ALT_CA_HOSTNAME / ALT_XDS_HOSTNAME) when given.
 * Connect timeout and keepalives follow ztunnel's control-plane channel.
 */
export function grpcClient<S extends DescService>(
  svc: S,
  address: string,
  rootPem: string | undefined,
  altHostname?: string,
): TypedClient<S> {
  let url: URL;
  try {
    url = new URL(address.includes('://') ? address : `https://${address}`);
  } catch {
    throw new MeshError('AMESH_ERR_CONFIG', `"${address}" is not a control plane address (expected https://host:port)`);
  }
  if (url.protocol !== 'https:')
    throw new MeshError('AMESH_ERR_CONFIG', `${address}: the control plane is reached over TLS; use https://`);
  const options: grpc.ChannelOptions = {
    'grpc.keepalive_time_ms': 30_000,
    'grpc.keepalive_timeout_ms': 10_000,
    'grpc.max_receive_message_length': 200 * 1024 * 1024,
    'grpc.initial_reconnect_backoff_ms': CHANNEL_INITIAL_RECONNECT_BACKOFF_MS,
    'grpc.max_reconnect_backoff_ms': CHANNEL_MAX_RECONNECT_BACKOFF_MS,
  };
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const tlsName = altHostname ?? host;
  if (tlsName !== host) options['grpc.ssl_target_name_override'] = tlsName;
  options['grpc.default_authority'] = tlsName;
  return makeTypedClient(
    svc,
    `${url.hostname}:${url.port || String(ISTIOD_GRPC_PORT)}`,
    grpc.credentials.createSsl(rootPem === undefined ? null : Buffer.from(rootPem)),
    options,
  );
}

/**
 * The metadata of every control-plane call (ztunnel src/identity/caclient.rs, src/xds/client.rs): the extra
 * XDS_HEADER_* / CA_HEADER_* pairs, then `authorization: Bearer <token>` (the file is re-read each time: projected
 * tokens rotate) and `clusterid`, which the extra headers cannot override. Throws when the token file is missing or
 * empty, naming it.
 */
export async function controlPlaneMetadata(
  tokenFile: string,
  clusterId: string,
  headers: readonly (readonly [string, string])[],
): Promise<grpc.Metadata> {
  let token: string;
  try {
    token = (await readFile(tokenFile, 'utf8')).trim();
  } catch (e) {
    throw new MeshError(
      'AMESH_ERR_CONFIG',
      `cannot read the token ${tokenFile}: ${(e as Error).message} (set AUTH_TOKEN or mount the istio-ca token)`,
    );
  }
  if (token === '') throw new MeshError('AMESH_ERR_CONFIG', `the token file ${tokenFile} is empty (AUTH_TOKEN)`);
  const md = new grpc.Metadata();
  for (const [k, v] of headers) md.set(k, v);
  md.set('authorization', `Bearer ${token}`);
  md.set('clusterid', clusterId);
  return md;
}
