import type { Identity } from '../../lib/spiffe.js';
import type { Caller } from './authenticate.js';

/**
 * The last step of node authorization (istio `security/pkg/server/ca/node_auth.go`): a trusted node proxy may have
 * a certificate for another identity only if that service account has a pod on the proxy's own node.
 */
export interface NodeAuthorizer {
  /** Why `caller` may not have a certificate for `requested`, or undefined when it may. */
  denial(caller: Caller, requested: Identity): string | undefined;
}
