/**
 * The error result a CNI plugin prints on stdout before exiting non-zero (containernetworking/cni SPEC.md "Error"):
 * a well-known code where the spec has one (1 version, 4 environment, 5 I/O, 6 decoding, 7 config, 11 try again
 * later; 8 is the reference library's invalid-netns code), 100 and up for this plugin's own, 999 for anything
 * unforeseen (as pkg/skel/skel.go reports a plain error). `details` carries amesh's catalogue code and message.
 */
import { describeError, isMeshError, type ErrorCode } from '../../lib/errors.js';

export interface CniErrorResult {
  readonly cniVersion: string;
  readonly code: number;
  readonly msg: string;
  readonly details: string;
}

type CniErrorCode = Extract<ErrorCode, `CNI_ERR_${string}`>;

const CNI_CODES: Readonly<Record<CniErrorCode, { readonly code: number; readonly msg: string }>> = {
  CNI_ERR_VERSION: { code: 1, msg: 'incompatible CNI version' },
  CNI_ERR_ENV: { code: 4, msg: 'invalid CNI environment variables' },
  CNI_ERR_STDIN: { code: 5, msg: 'cannot read the network config' },
  CNI_ERR_DECODE: { code: 6, msg: 'cannot decode the network config' },
  CNI_ERR_CONFIG: { code: 7, msg: 'invalid network config' },
  CNI_ERR_NETNS: { code: 8, msg: 'invalid network namespace' },
  CNI_ERR_KUBE_API: { code: 11, msg: 'cannot read the pod from the Kubernetes API, try again later' },
  CNI_ERR_AGENT_UNAVAILABLE: { code: 11, msg: 'the node agent is not reachable, try again later' },
  CNI_ERR_CAPTURE_FAILED: { code: 100, msg: 'the node agent could not capture the pod' },
};

/** Code of an error nobody foresaw: the reference library's ErrInternal. */
const INTERNAL = 999;

export function cniErrorResult(e: unknown, cniVersion: string): CniErrorResult {
  const known = isMeshError(e) && Object.hasOwn(CNI_CODES, e.code) ? CNI_CODES[e.code as CniErrorCode] : undefined;
  return {
    cniVersion,
    code: known?.code ?? INTERNAL,
    msg: known?.msg ?? 'internal error in amesh-cni',
    details: describeError(e),
  };
}
