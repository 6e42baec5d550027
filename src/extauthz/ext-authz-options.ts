/**
 * The flags of `amesh x extauthz`, named as Istio's sample ext_authz server names them (istio
 * `samples/extauthz/cmd/extauthz/main.go`: `-http`, `-grpc`, `-allow_service_account`), checked.
 */
import { isIP } from 'node:net';
import { MeshError } from '../lib/errors.js';
import type { ExtAuthzOptions } from './ext-authz-server.js';

/** A port flag's value: 0 (the kernel chooses) to 65535. */
function port(value: string, flag: string): number {
  if (!/^\d{1,5}$/.test(value) || Number(value) > 65_535)
    throw new MeshError('AMESH_ERR_CONFIG', `--${flag}: "${value}" is not a port (0 to 65535)`);
  return Number(value);
}

/** The server's options from the command line's strings. */
export function extAuthzOptions(flags: {
  http: string;
  grpc: string;
  allow_service_account: string;
  address?: string | undefined;
}): ExtAuthzOptions {
  const httpPort = port(flags.http, 'http');
  const grpcPort = port(flags.grpc, 'grpc');
  if (flags.address !== undefined && isIP(flags.address) === 0)
    throw new MeshError('AMESH_ERR_CONFIG', `--address: "${flags.address}" is not an IP address`);
  if (flags.allow_service_account === '' || flags.allow_service_account.includes('/'))
    throw new MeshError(
      'AMESH_ERR_CONFIG',
      `--allow_service_account: "${flags.allow_service_account}" is not a service account name`,
    );
  return { address: flags.address, httpPort, grpcPort, allowServiceAccount: flags.allow_service_account };
}
