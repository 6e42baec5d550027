/**
 * The waypoint's listener: HBONE on `<pod IP>:15008` accepts CONNECTs bound for the services and workloads that use
 * this waypoint (the CONNECT names the address the client dialled; ztunnel's `isWaypointFor` admits it). A Service
 * port declared HTTP is served request by request (`http-proxy.ts`); anything else is relayed as bytes to the
 * destination over HBONE with the waypoint's identity: a service to one of its healthy endpoints, a workload to
 * itself (ztunnel `src/proxy/outbound.rs` does not send a waypoint's traffic back to it), as Istio's waypoint does.
 */
import { MeshError } from '../lib/errors.js';
import { formatHostPort, parseHostPort } from '../lib/ip.js';
import { HBONE_PORT } from '../lib/istio-ports.js';
import type { LocalProxies } from '../ztunnel/ztunnel.js';
import { H2Stream } from '../h2/h2-stream.js';
import { InboundHbone, type InboundForward } from '../ztunnel/proxy/inbound.js';
import type { InboundPeer, InboundRequest } from '../ztunnel/proxy/inbound-request.js';
import { connectionInfo } from '../ztunnel/proxy/connection-info.js';
import { LocalWorkloadInformation } from '../ztunnel/proxy/local-workload.js';
import { Outbound } from '../ztunnel/proxy/outbound.js';
import type { ProxyContext } from '../ztunnel/proxy/proxy-context.js';
import { resolveBehindWaypoint } from '../ztunnel/state/upstream.js';
import type { MetricsRegistry } from '../ztunnel/admin/prom-client-core.js';
import { WaypointHttp } from './http-proxy.js';
import { RequestMetrics } from './request-metrics.js';
import { WaypointAuthorizer } from './waypoint-authorizer.js';
import { ExtAuthzClient } from './ext-authz.js';
import type { WaypointRules } from './waypoint-rules.js';

export class WaypointListener implements LocalProxies {
  private readonly local: LocalWorkloadInformation;
  private readonly outbound: Outbound;
  private readonly inbound: InboundHbone;
  private readonly http: WaypointHttp;
  private readonly authorizer: WaypointAuthorizer;
  private listening = false;

  constructor(
    private readonly ctx: ProxyContext,
    registry: MetricsRegistry,
    private readonly podUid: string,
    private readonly ip: string,
    private readonly rules: WaypointRules,
  ) {
    this.local = LocalWorkloadInformation.byUid(ctx.state, podUid);
    this.outbound = new Outbound(ctx, this.local);
    this.authorizer = new WaypointAuthorizer(rules, ctx.log);
    this.http = new WaypointHttp(
      ctx,
      this.outbound,
      ip,
      new RequestMetrics(registry),
      rules,
      this.authorizer,
      new ExtAuthzClient(ctx, this.outbound, ip),
    );
    // ztunnel's policies (by namespace or selector) are for the workloads ztunnel captures, which a waypoint's pod is
    // not; a waypoint enforces the policies attached to it (targetRefs), as Istio's does.
    this.inbound = new InboundHbone(
      ctx,
      this.local,
      ip,
      (req, peer) => this.forward(req, peer),
      () => [],
    );
    this.inbound.start().then(
      () => (this.listening = true),
      (e: unknown) => ctx.log.error({ error: String(e), addr: this.inbound.address }, 'waypoint cannot listen'),
    );
  }

  /** Sends an accepted CONNECT on to its destination over HBONE. */
  private async forward(req: InboundRequest, peer: InboundPeer): ReturnType<InboundForward> {
    const target = parseHostPort(req.info.originalDst);
    if (target === undefined)
      throw new MeshError('ZT_ERR_HBONE_BAD_REQUEST', `CONNECT target ${req.info.originalDst} is not ip:port`);
    const self = req.destination;
    const service = this.ctx.state.serviceByVip(self.network, target.host, self.namespace);
    const sourceIp = req.info.parties.source?.workloadIps[0] ?? peer.ip;
    const appProtocol = service?.appProtocols?.[String(target.port)];
    if (appProtocol === 'HTTP11' || appProtocol === 'HTTP2' || appProtocol === 'GRPC') {
      // HTTP: each request is authorized and routed on its own; the tunnel is reported as the client's to the Service.
      const parties = {
        ...req.info.parties,
        reporter: 'waypoint' as const,
        destination: undefined,
        destinationService: service,
      };
      const tunnel = { self, ip: target.host, port: target.port, peerAddr: peer.addr, sourceIp, parties };
      return {
        serve: (stream, done) =>
          appProtocol === 'HTTP11' ? this.http.serve(stream, tunnel, done) : this.http.serveHttp2(stream, tunnel, done),
        info: connectionInfo(req.info.workloadUid, req.info, parties, req.info.rbac),
      };
    }
    const flow = {
      ip: target.host,
      port: target.port,
      peerAddr: peer.addr,
      sourceIp,
      parties: { ...req.info.parties, destinationService: service ?? req.info.parties.destinationService },
    };
    const refusal = this.authorizer.connection(flow);
    if (refusal !== undefined) throw new MeshError('ZT_ERR_POLICY_DENIED', refusal);
    const dest = resolveBehindWaypoint(this.ctx.state, self, target.host, target.port);
    const { upstream } = await this.outbound.connect(peer.addr, this.ip, dest.ip, dest.port);
    if (!(upstream instanceof H2Stream)) {
      upstream.destroy();
      throw new MeshError(
        'ZT_ERR_UPSTREAM_CONNECT',
        `${dest.ip} is not reached over HBONE; a waypoint forwards only to the mesh`,
      );
    }
    // Reported as Istio's waypoints report: reporter="waypoint", the client as source, the destination behind it.
    const info = connectionInfo(
      req.info.workloadUid,
      req.info,
      {
        ...req.info.parties,
        reporter: 'waypoint',
        destination: this.ctx.state.workloadByAddr(req.destination.network, dest.ip),
        destinationService: dest.service ?? req.info.parties.destinationService,
      },
      req.info.rbac,
    );
    return { upstream, bytes: () => [upstream.bytesSent, upstream.bytesReceived], info };
  }

  reconcile(): void {
    // One listener on the pod's own IP, whatever the state says.
  }

  pending(): string[] {
    const out: string[] = [];
    if (!this.listening) out.push(`HBONE listener on ${formatHostPort(this.ip, HBONE_PORT)} not up`);
    if (this.local.current() === undefined) out.push(`waypoint workload ${this.podUid} not known yet`);
    return out;
  }

  dump(): Record<string, object> {
    return { waypoint: { workload: this.podUid, hbone: this.inbound.address, config: this.rules.dump() } };
  }

  close(immediate: boolean): void {
    this.inbound.close(immediate);
    if (immediate) this.http.close();
  }
}
