import { authenticationFailure, authenticationReason, type Caller, type CallerAuthenticator } from './authenticate.js';

/**
 * Several authenticators tried in order, the first that accepts the caller wins (istio `pkg/security/authentication.go`
 * authenticationManager); when none does, the failure lists what each said, for istiod's log.
 */
export class AuthenticatorChain implements CallerAuthenticator {
  constructor(private readonly authenticators: readonly CallerAuthenticator[]) {}

  async authenticate(authorization: string | undefined, clusterId?: string): Promise<Caller> {
    const failures: string[] = [];
    for (const a of this.authenticators) {
      try {
        return await a.authenticate(authorization, clusterId);
      } catch (e) {
        failures.push(authenticationReason(e));
      }
    }
    return authenticationFailure(failures.join('; '));
  }
}
