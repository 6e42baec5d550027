import type { RbacDecision } from '../rbac.js';
import type { ConnectionInfo } from './connection-info.js';
import type { ProxyContext } from './proxy-context.js';

/**
 * Logs what L4 authorization decided for an inbound connection: the notes of dry-run policies at info, then the
 * outcome, at info with AUTHZ_POLICY_INFO_LOGGING (ztunnel `src/config.rs`), else at debug.
 */
export function logPolicyDecision(
  ctx: Pick<ProxyContext, 'log' | 'config'>,
  info: ConnectionInfo,
  decision: RbacDecision,
): void {
  const fields = { src: info.src, dst: info.originalDst };
  for (const n of decision.dryRunNotes) ctx.log.info(fields, n);
  const level = ctx.config.authzPolicyInfoLogging ? 'info' : 'debug';
  if (decision.allowed) ctx.log[level](fields, 'connection allowed by policy');
  else ctx.log[level]({ ...fields, reason: decision.reason }, 'connection denied by policy');
}
