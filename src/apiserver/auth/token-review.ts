/**
 * TokenReview (authentication.k8s.io/v1): answers whether a token authenticates, for whom and for which
 * audiences, as kubernetes pkg/registry/authentication/tokenreview/storage.go does: an empty token is a 400;
 * `spec.audiences` defaults to the API audiences; `status.audiences` are those the token was accepted for;
 * `status.error` carries the reason a token was refused; `status.user` is always present (empty when refused),
 * and `authenticated` is left out when false, as Go's JSON encoding of the status leaves it.
 */
import { ApiError } from '../api-error.js';
import type { KubeObject } from '../kube-object.js';
import type { Authenticator } from './authenticator.js';
import { isRecord } from '../../lib/record.js';

/** The TokenReview `body` with its `status` filled in. */
export async function reviewToken(authenticator: Authenticator, body: KubeObject): Promise<KubeObject> {
  const spec = isRecord(body['spec']) ? body['spec'] : {};
  const token = spec['token'];
  if (token !== undefined && typeof token !== 'string')
    throw new ApiError(
      'BadRequest',
      'TokenReview in version "v1" cannot be handled as a TokenReview: spec.token is not a string',
    );
  if (token === undefined || token === '')
    throw new ApiError('BadRequest', 'token is required for TokenReview in authentication');
  const auds = spec['audiences'];
  if (auds !== undefined && auds !== null && !(Array.isArray(auds) && auds.every((a) => typeof a === 'string'))) {
    throw new ApiError(
      'BadRequest',
      'TokenReview in version "v1" cannot be handled as a TokenReview: spec.audiences is not a list of strings',
    );
  }
  const r = await authenticator.authenticateToken(token, auds ?? undefined);
  let status: Record<string, unknown>;
  if (r.authenticated) {
    const u = r.user;
    status = {
      authenticated: true,
      user: {
        username: u.username,
        ...(u.uid !== undefined && u.uid !== '' ? { uid: u.uid } : {}),
        groups: [...u.groups],
        ...(u.extra !== undefined
          ? { extra: Object.fromEntries(Object.entries(u.extra).map(([k, v]) => [k, [...v]])) }
          : {}),
      },
      audiences: [...r.audiences],
    };
  } else {
    status = { user: {}, error: r.error };
  }
  return { ...body, apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', status };
}
