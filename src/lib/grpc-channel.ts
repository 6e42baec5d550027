import * as grpc from '@grpc/grpc-js';
import type { DescService } from '@bufbuild/protobuf';
import { MeshError } from './errors.js';
import { grpcServiceDefinition } from './grpc-service.js';

/** The hostname on istiod's certificate that clients verify when they dial an address without one (spec §2.3). */
export const ISTIOD_HOSTNAME = 'istiod.istio-system.svc';

/**
 * A grpc-js client for `svc` over TLS to `address` (`https://host:port` or `host:port`), verifying the server
 * against `rootPem`. The TLS name is the URL's host, or `altHostname` (ztunnel's ALT_CA_HOSTNAME /
 * ALT_XDS_HOSTNAME) when given. Connect timeout and keepalives follow ztunnel's control-plane channel.
 */
export function grpcClient(svc: DescService, address: string, rootPem: string, altHostname?: string): grpc.Client {
  let url: URL;
  try {
    url = new URL(address.includes('://') ? address : `https://${address}`);
  } catch {
    throw new MeshError('AMESH_ERR_CONFIG', `"${address}" is not a control plane address (expected https://host:port)`);
  }
  if (url.protocol !== 'https:') throw new MeshError('AMESH_ERR_CONFIG', `${address}: the control plane is reached over TLS; use https://`);
  const Ctor = grpc.makeGenericClientConstructor(grpcServiceDefinition(svc), svc.name);
  const options: grpc.ChannelOptions = {
    'grpc.keepalive_time_ms': 30_000,
    'grpc.keepalive_timeout_ms': 10_000,
    'grpc.max_receive_message_length': 200 * 1024 * 1024,
    'grpc.initial_reconnect_backoff_ms': 500,
  };
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const tlsName = altHostname ?? host;
  if (tlsName !== host) options['grpc.ssl_target_name_override'] = tlsName;
  options['grpc.default_authority'] = tlsName;
  return new Ctor(`${url.hostname}:${url.port || '15012'}`, grpc.credentials.createSsl(Buffer.from(rootPem)), options);
}
