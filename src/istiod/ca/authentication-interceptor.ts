import * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { describeError } from '../../lib/errors.js';
import type { Authenticator } from './authenticate.js';

/**
 * What an unauthenticated caller is told, word for word as Istio's CA says it (security/pkg/server/ca/server.go):
 * nothing about why, which issuers are trusted or which accounts may impersonate. The reason goes to our log.
 */
export const AUTHENTICATION_FAILURE = 'request authenticate failure';

/**
 * Authenticates every call on istiod's gRPC port from its metadata, before its request message is read: grpc-js
 * keeps the HTTP/2 stream paused until the handler asks for the message, and a rejected call never gets there, so
 * an unauthenticated body is neither buffered nor decoded (HTTP/2 flow control holds the sender to one window).
 */
export function authenticationInterceptor(auth: Authenticator, log: Logger, onReject: (path: string) => void): grpc.ServerInterceptor {
  return (method, call) =>
    new grpc.ServerInterceptingCall(call, {
      start: (next) => {
        next({
          onReceiveMetadata: (metadata, proceed) => {
            const header = metadata.get('authorization')[0];
            auth.authenticate(typeof header === 'string' ? header : undefined).then(
              () => {
                proceed(metadata);
              },
              (e: unknown) => {
                log.warn({ method: method.path, peer: call.getPeer(), error: describeError(e) }, 'unauthenticated call rejected');
                onReject(method.path);
                call.sendStatus({ code: grpc.status.UNAUTHENTICATED, details: AUTHENTICATION_FAILURE, metadata: new grpc.Metadata() });
              },
            ).catch((e: unknown) => {
              // The call may be gone by now (the peer hung up): nothing to answer, and never an unhandled rejection.
              log.debug({ method: method.path, error: describeError(e) }, 'authentication outcome could not be delivered');
            });
          },
        });
      },
    });
}
