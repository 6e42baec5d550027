import * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { describeError } from '../../lib/errors.js';
import type { Caller, CallerAuthenticator } from './authenticate.js';

/**
 * What an unauthenticated caller is told, word for word as Istio's CA says it (security/pkg/server/ca/server.go):
 * nothing about why, which issuers are trusted or which accounts may impersonate. The reason goes to our log.
 */
export const AUTHENTICATION_FAILURE = 'request authenticate failure';

/** The cluster a caller says it is in (istio `security/pkg/server/ca/authenticate/kubeauth/kube_jwt.go` ExtractClusterID). */
const CLUSTER_ID_METADATA = 'clusterid';

/**
 * Callers the interceptor authenticated, by their call's metadata (grpc-js hands the handler the object the
 * interceptor passed on), so a handler does not authenticate again: with the Kubernetes API that would be a
 * second TokenReview for every call.
 */
const authenticated = new WeakMap<grpc.Metadata, Caller>();

function authenticateMetadata(auth: CallerAuthenticator, md: grpc.Metadata): Promise<Caller> {
  const header = md.get('authorization')[0];
  const cluster = md.get(CLUSTER_ID_METADATA);
  return auth.authenticate(
    typeof header === 'string' ? header : undefined,
    cluster.length === 1 && typeof cluster[0] === 'string' ? cluster[0] : '',
  );
}

/** The caller of a call: the one the interceptor authenticated, else authenticated now. */
export function authenticatedCaller(auth: CallerAuthenticator, md: grpc.Metadata): Promise<Caller> {
  const known = authenticated.get(md);
  return known !== undefined ? Promise.resolve(known) : authenticateMetadata(auth, md);
}

/**
 * Authenticates every call on istiod's gRPC port from its metadata, before its request message is read: grpc-js
 * keeps the HTTP/2 stream paused until the handler asks for the message, and a rejected call never gets there, so
 * an unauthenticated body is neither buffered nor decoded (HTTP/2 flow control holds the sender to one window).
 */
export function authenticationInterceptor(
  auth: CallerAuthenticator,
  log: Logger,
  onReject: (path: string) => void,
): grpc.ServerInterceptor {
  return (method, call) =>
    new grpc.ServerInterceptingCall(call, {
      start: (next) => {
        next({
          onReceiveMetadata: (metadata, proceed) => {
            authenticateMetadata(auth, metadata)
              .then(
                (caller) => {
                  authenticated.set(metadata, caller);
                  proceed(metadata);
                },
                (e: unknown) => {
                  log.warn(
                    { method: method.path, peer: call.getPeer(), error: describeError(e) },
                    'unauthenticated call rejected',
                  );
                  onReject(method.path);
                  call.sendStatus({
                    code: grpc.status.UNAUTHENTICATED,
                    details: AUTHENTICATION_FAILURE,
                    metadata: new grpc.Metadata(),
                  });
                },
              )
              .catch((e: unknown) => {
                // The call may be gone by now (the peer hung up): nothing to answer, and never an unhandled rejection.
                log.debug(
                  { method: method.path, error: describeError(e) },
                  'authentication outcome could not be delivered',
                );
              });
          },
        });
      },
    });
}
