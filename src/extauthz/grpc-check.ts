/**
 * The gRPC check of Istio's sample ext_authz server (istio `samples/extauthz/cmd/extauthz/main.go`,
 * `extAuthzServerV3.Check`), the answer to Envoy's `/envoy.service.auth.v3.Authorization/Check`: a request whose
 * `x-ext-authz` header is present is allowed when it is `allow`; one without it when its source principal names the
 * allowed service account (`.../sa/<name>`). Allowed: status OK with headers for the upstream request. Denied:
 * PERMISSION_DENIED with a 403 for the client, the sample's body and the same headers.
 */
import { create, toJsonString } from '@bufbuild/protobuf';
import { AttributeContextSchema } from '../api/envoy/service/auth/v3/attribute_context_pb.js';
import {
  CheckResponseSchema,
  type CheckRequest,
  type CheckResponse,
} from '../api/envoy/service/auth/v3/external_auth_pb.js';
import { StatusCode } from '../api/envoy/type/v3/http_status_pb.js';
import { CHECK_WORDS, notTooLong } from './check-words.js';

/** google.rpc.Code values (googleapis `google/rpc/code.proto`), the ones a check answers with. */
const OK = 0;
const PERMISSION_DENIED = 7;

/** The answer to `request` with `allowServiceAccount` the service account let in without the header, and its log line. */
export function grpcCheck(
  request: CheckRequest,
  allowServiceAccount: string,
): { response: CheckResponse; logLine: string } {
  const attributes = request.attributes ?? create(AttributeContextSchema);
  const http = attributes.request?.http;
  const header = http?.headers[CHECK_WORDS.checkHeader];
  const allowed =
    header !== undefined
      ? header === CHECK_WORDS.allowValue
      : attributes.source !== undefined && attributes.source.principal.endsWith(`/sa/${allowServiceAccount}`);
  const result = allowed ? CHECK_WORDS.allowed : CHECK_WORDS.denied;
  const described = toJsonString(AttributeContextSchema, attributes);
  const headers = [
    [CHECK_WORDS.resultHeader, result],
    [CHECK_WORDS.receivedHeader, notTooLong(described)],
    [CHECK_WORDS.overrideHeader, CHECK_WORDS.overrideGrpcValue],
  ].map(([key, value]) => ({ header: { key, value } }));
  const logLine = `[gRPCv3][${result}]: ${http?.host ?? ''}${http?.path ?? ''}, attributes: ${described}`;
  const response = create(
    CheckResponseSchema,
    allowed
      ? { status: { code: OK }, httpResponse: { case: 'okResponse', value: { headers } } }
      : {
          status: { code: PERMISSION_DENIED },
          httpResponse: {
            case: 'deniedResponse',
            value: { status: { code: StatusCode.Forbidden }, headers, body: CHECK_WORDS.denyBody },
          },
        },
  );
  return { response, logLine };
}
