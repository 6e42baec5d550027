import net from 'node:net';
import { canonicalIp, formatHostPort } from '../../lib/ip.js';
import { OUTBOUND_CAPTURE_PORT } from '../../lib/istio-ports.js';
import type { Outbound } from './outbound.js';
import { AcceptingListener } from './accepting-listener.js';
import type { ProxyContext } from './proxy-context.js';

/**
 * Outbound capture on `<listen IP>:15001` (ztunnel `src/proxy/outbound.rs`): the pod's rules redirect its apps'
 * connections here; each goes where the app sent it (SO_ORIGINAL_DST) through the outbound flow. A connection
 * that cannot be set up is reset: the app sees a refused connection, as without the mesh.
 */
export function outboundCaptureListener(ctx: ProxyContext, outbound: Outbound, listenIp: string): AcceptingListener {
  return new AcceptingListener(ctx, 'outbound capture', listenIp, OUTBOUND_CAPTURE_PORT, (s) =>
    handle(ctx, outbound, s),
  );
}

async function handle(ctx: ProxyContext, outbound: Outbound, client: net.Socket): Promise<void> {
  const srcIp = canonicalIp(client.remoteAddress ?? '') ?? '';
  const src = formatHostPort(srcIp, client.remotePort ?? 0);
  const dst = ctx.sockets.originalDst(client);
  let setup;
  try {
    // Failures are logged and counted by the outbound flow itself.
    setup = await outbound.connect(src, srcIp, dst.ip, dst.port);
  } catch {
    if (!client.destroyed) client.resetAndDestroy();
    return;
  }
  if (client.destroyed) {
    setup.upstream.destroy();
    return;
  }
  outbound.run(client, setup);
}
