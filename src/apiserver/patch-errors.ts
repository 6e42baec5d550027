/**
 * The errors k8s.io/apiserver pkg/endpoints/handlers/patch.go serves for a patch it cannot apply, shared by the
 * JSON patch, merge patch and strategic merge patch modules.
 */
import { ApiError } from './api-error.js';
import { goJsonKind, goQuote } from './go-format.js';

/**
 * The generic `422 Invalid` (NewGenericServerResponse) upstream answers with when a patch does not apply: the
 * message is fixed and the details are empty; the underlying error stays on the ApiError as `cause` for our logs.
 */
export function patchNotApplicable(cause: Error): ApiError {
  const err = new ApiError('Invalid', 'the server rejected our request due to an error in our request', {});
  err.cause = cause;
  return err;
}

/** The `422 Invalid` on field `patch` when the patched document does not decode into an object of the kind. */
export function patchResultNotAnObject(result: unknown): ApiError {
  const message = `Invalid value: ${goQuote(JSON.stringify(result))}: json: cannot unmarshal ${goJsonKind(result)} into Go value of type map[string]interface {}`;
  return new ApiError('Invalid', ` "" is invalid: patch: ${message}`, {
    causes: [{ reason: 'FieldValueInvalid', message, field: 'patch' }],
  });
}
