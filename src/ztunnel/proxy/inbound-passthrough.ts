import net from 'node:net';
import { describeError, MeshError } from '../../lib/errors.js';
import { canonicalIp, formatHostPort } from '../../lib/ip.js';
import { ILLEGAL_PORTS, WORKLOAD_WAIT_MS } from '../config.js';
import { INBOUND_PLAINTEXT_PORT } from '../../lib/istio-ports.js';
import { evaluate, type RbacConnection } from '../rbac.js';
import type { LocalWorkloadInformation } from './local-workload.js';
import { AcceptingListener } from './accepting-listener.js';
import { connectionInfo } from './connection-info.js';
import { guessInboundService } from './guess-inbound-service.js';
import { logPolicyDecision } from './log-policy-decision.js';
import type { ProxyContext } from './proxy-context.js';
import { relay } from './relay.js';

/**
 * Inbound plaintext on `<listen IP>:15006` (ztunnel `src/proxy/inbound_passthrough.rs`): connections the pod's rules
 * redirected here without HBONE. The destination is the original one (SO_ORIGINAL_DST); policy sees no peer
 * identity, so PeerAuthentication STRICT (istiod's static DENY of identity-less connections) and policies that
 * require an identity deny. A denied connection is closed without a byte; an allowed one reaches the app from the
 * client's own address. Telemetry names the service the workload backs on the destination port, as a guess.
 */
export function inboundPassthroughListener(
  ctx: ProxyContext,
  local: LocalWorkloadInformation,
  listenIp: string,
): AcceptingListener {
  return new AcceptingListener(ctx, 'inbound plaintext', listenIp, INBOUND_PLAINTEXT_PORT, (s) =>
    handle(ctx, local, s),
  );
}

async function handle(ctx: ProxyContext, localInfo: LocalWorkloadInformation, client: net.Socket): Promise<void> {
  const { state, connections, config, sockets } = ctx;
  const srcIp = canonicalIp(client.remoteAddress ?? '') ?? '';
  const src = formatHostPort(srcIp, client.remotePort ?? 0);
  const dst = sockets.originalDst(client);
  const dstAddr = formatHostPort(dst.ip, dst.port);
  if (ILLEGAL_PORTS.has(dst.port)) {
    ctx.log.warn(
      {
        src,
        dst: dstAddr,
        error: describeError(new MeshError('ZT_ERR_SELF_CALL', `target port ${dst.port} belongs to ztunnel itself`)),
      },
      'inbound plaintext connection refused',
    );
    client.destroy();
    return;
  }
  const local = await localInfo.wait();
  if (local === undefined) {
    ctx.log.warn(
      {
        src,
        dst: dstAddr,
        error: describeError(
          new MeshError(
            'ZT_ERR_UNKNOWN_WORKLOAD',
            `workload ${localInfo.key} is not known to this ztunnel (waited ${WORKLOAD_WAIT_MS / 1000}s)`,
          ),
        ),
      },
      'inbound plaintext connection refused',
    );
    client.destroy();
    return;
  }
  // Plaintext cannot have crossed a network gateway: the source is on this workload's network.
  const source = state.workloadByAddr(local.network || config.network, srcIp);
  const rbac: RbacConnection = { srcIp, dstIp: dst.ip, dstPort: dst.port, srcIdentity: undefined };
  const info = connectionInfo(
    localInfo.key,
    { src, originalDst: dstAddr, actualDst: dstAddr },
    {
      reporter: 'destination',
      source,
      sourceIdentity: undefined,
      destination: local,
      destinationService: guessInboundService(state, local, dst.port),
      mtls: false,
    },
    rbac,
  );
  const decision = evaluate(state.policiesFor(local), rbac);
  logPolicyDecision(ctx, info, decision);
  if (!decision.allowed) {
    connections.builtThenFailed(info, 'DENY', new MeshError('ZT_ERR_POLICY_DENIED', decision.reason));
    client.destroy();
    return;
  }
  let upstream: net.Socket;
  try {
    upstream = await sockets.connect(dst.ip, dst.port, sockets.inboundSource(srcIp, dst.ip));
  } catch (e) {
    connections.builtThenFailed(
      info,
      'CONNECT',
      e instanceof MeshError ? e : new MeshError('ZT_ERR_UPSTREAM_CONNECT', describeError(e)),
    );
    client.resetAndDestroy();
    return;
  }
  if (client.destroyed) {
    upstream.destroy();
    return;
  }
  const tracked = connections.open(
    info,
    () => {
      client.destroy();
      upstream.destroy();
    },
    () => [upstream.bytesWritten, upstream.bytesRead],
  );
  relay(client, upstream, (err) => tracked.finish(err));
}
