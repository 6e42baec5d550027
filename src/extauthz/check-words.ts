/**
 * The words of Istio's sample ext_authz server (istio `samples/extauthz/cmd/extauthz/main.go`, its constants): the
 * header a request opts in with, the headers every answer carries, and the body of a denial. Istio's ext_authz
 * tests and docs look for exactly these.
 */
export const CHECK_WORDS = Object.freeze({
  /** The request header that decides: allowed when its value is `allowValue`. */
  checkHeader: 'x-ext-authz',
  allowValue: 'allow',
  /** `allowed` or `denied`, on every answer. */
  resultHeader: 'x-ext-authz-check-result',
  allowed: 'allowed',
  denied: 'denied',
  /** What the server received, on one line. */
  receivedHeader: 'x-ext-authz-check-received',
  /** Over HTTP the request's own value is echoed back; over gRPC this fixed value is sent. */
  overrideHeader: 'x-ext-authz-additional-header-override',
  overrideGrpcValue: 'grpc-additional-header-override-value',
  denyBody: 'denied by ext_authz for not found header `x-ext-authz: allow` in the request',
});

/**
 * `text`, or `<too-long>` when it exceeds what a header may carry through Envoy (about 60 KiB: a bigger one would
 * have Envoy answer 431), as the sample's `returnIfNotTooLong`.
 */
export function notTooLong(text: string): string {
  return text.length > 60_000 ? '<too-long>' : text;
}
