/**
 * Istio's own Gateway (networking.istio.io) → listeners of the ingress gateways it selects, with the routes of the
 * VirtualServices bound to it, as istio `pilot/pkg/networking/core/gateway.go` builds a gateway's servers:
 * - the proxies are the pods its `selector` matches, in any namespace (Istio's default, without
 *   `PILOT_SCOPE_GATEWAY_TO_NAMESPACE`), each known by its workload (`<namespace>/<Deployment>`);
 * - each server host (`host`; `ns/host`, where `.` is the Gateway's namespace and `*` any) becomes a listener on
 *   the server's port (translated to the target port of the gateway's Service that has it, as Istio does), HTTP,
 *   or HTTPS in SIMPLE mode with its `credentialName` fetched over SDS as `kubernetes://<name>`:
 *   only from the proxy's own namespace, and only if the proxy's service account may list Secrets there; in MUTUAL
 *   and OPTIONAL_MUTUAL modes, clients' certificates are verified against `kubernetes://<name>-cacert` (the
 *   credential's `ca.crt`, or a Secret of that name) as Envoy's do, and must carry one of `subjectAltNames` and
 *   match one of `verifyCertificateHash`/`verifyCertificateSpki` when those are given;
 * - a VirtualService binds when its `gateways` name the Gateway and its namespace is one the server host admits;
 *   its hosts meet the server's, and its routes (in its own order, VirtualServices oldest first) serve each host
 *   they share, restricted to the server's port when a match names one;
 * - an HTTP server with `tls.httpsRedirect` answers every request for its hosts with a 301 to the same host and path
 *   over https, before any route (Envoy's `require_tls: ALL` on the virtual hosts Istio makes for the server): its
 *   virtual hosts, those VirtualServices give and the server host's own, have that one redirect.
 * - a TLS server in PASSTHROUGH mode (protocol TLS or HTTPS) relays connections by SNI to the VirtualServices' `tls`
 *   routes, and a TCP server relays every connection to their first `tcp` route (`l4Hosts`); a TLS server in SIMPLE,
 *   MUTUAL or OPTIONAL_MUTUAL mode terminates TLS as an HTTPS server does, per host by SNI, and relays what is
 *   inside as a TCP server does (istio `createGatewayTCPFilterChainOpts`).
 * Servers of other protocols and TLS modes are left out and said so.
 */
import { selectorMatches } from '../../apiserver/validation/label-selector.js';
import type { ResourceOf } from '../registry/manifest-dir.js';
import { meet, type GatewayListenerModel } from './gateway-listeners.js';
import { present, type RedirectModel, type RouteModel } from './http-routes.js';
import type { ConvertedVirtualService } from './virtual-services.js';
import { servicePorts } from './services.js';
import { containerPorts, podWorkloadName } from './workloads.js';

/** The TLS modes of an HTTPS server whose TLS the gateway terminates. */
const TERMINATED: ReadonlySet<string> = new Set(['SIMPLE', 'MUTUAL', 'OPTIONAL_MUTUAL']);

/** Where an HTTP server with `httpsRedirect` sends every request: https, its well-known port, host and path kept. */
const HTTPS_REDIRECT: RedirectModel = { scheme: 'https', hostname: '', port: 0, path: undefined, statusCode: 301 };

/** The listeners each proxy gets from Istio Gateways, by `<namespace>/<workload>`, with what could not be served. */
export function istioGatewayListeners(
  gateways: readonly ResourceOf<'IstioGateway'>[],
  pods: readonly ResourceOf<'Pod'>[],
  virtualServices: readonly ConvertedVirtualService[],
  services: readonly ResourceOf<'Service'>[] = [],
): { readonly listeners: ReadonlyMap<string, GatewayListenerModel[]>; readonly warnings: readonly string[] } {
  const warnings: string[] = [];
  const out = new Map<string, GatewayListenerModel[]>();
  for (const gw of gateways) {
    const key = `${gw.metadata.namespace}/${gw.metadata.name}`;
    const selector = gw.spec.selector ?? {};
    /** Each proxy the Gateway selects, with one of its pods (a workload's pods share labels and ports). */
    const proxies = new Map<string, ResourceOf<'Pod'>>();
    for (const p of pods)
      if (selectorMatches({ matchLabels: selector }, p.metadata.labels))
        proxies.set(`${p.metadata.namespace}/${podWorkloadName(p)}`, p);
    if (proxies.size === 0) continue;
    const listeners: GatewayListenerModel[] = [];
    present(gw.spec.servers).forEach((server, i) => {
      const where = `Gateway ${key} server ${server.name ?? server.port?.name ?? i}`;
      const portNumber = server.port?.number ?? 0;
      const protocol = (server.port?.protocol ?? '').toUpperCase();
      const tls = server.tls;
      let served: 'HTTP' | 'HTTPS' | 'TLS' | 'TCP';
      let credentialNames: string[] = [];
      let clientCa: Pick<
        GatewayListenerModel,
        | 'clientCaNames'
        | 'clientCertificateOptional'
        | 'clientSubjectAltNames'
        | 'clientCertificateHashes'
        | 'clientCertificateSpkis'
      > = {};
      const mode = tls?.mode ?? 'SIMPLE';
      const terminated =
        (protocol === 'HTTPS' || protocol === 'TLS') && TERMINATED.has(mode) && (tls?.credentialName ?? '') !== '';
      if (protocol === 'HTTP') served = 'HTTP';
      else if (terminated) {
        served = protocol;
        credentialNames = [`kubernetes://${tls!.credentialName!}`];
        // Client certificates verified against the credential's CA, which SDS serves under the `-cacert` name.
        if (mode !== 'SIMPLE')
          clientCa = {
            clientCaNames: [`kubernetes://${tls!.credentialName!}-cacert`],
            clientCertificateOptional: mode === 'OPTIONAL_MUTUAL',
            clientSubjectAltNames: present(tls!.subjectAltNames),
            clientCertificateHashes: present(tls!.verifyCertificateHash),
            clientCertificateSpkis: present(tls!.verifyCertificateSpki),
          };
      } else if ((protocol === 'TLS' || protocol === 'HTTPS') && mode === 'PASSTHROUGH') served = 'TLS';
      else if (protocol === 'TCP') served = 'TCP';
      else {
        warnings.push(
          `${where}: ${protocol || 'no protocol'}${tls?.mode == null ? '' : ` with TLS mode ${tls.mode}`} is not served by amesh's gateway`,
        );
        return;
      }
      const listenerName = `${key}.${server.name ?? i}`;
      const redirect: RouteModel | undefined =
        served === 'HTTP' && tls?.httpsRedirect === true
          ? {
              name: `${listenerName}.https-redirect`,
              matches: [],
              requestHeaders: undefined,
              responseHeaders: undefined,
              action: { redirect: HTTPS_REDIRECT },
              rewrite: undefined,
              timeoutMs: undefined,
            }
          : undefined;
      // A TCP server is one listener for all its hosts: a connection carries no name to tell them apart.
      const serverHosts = present(server.hosts);
      // A TLS server's terminated connections are relayed as a TCP server's are, told apart by SNI.
      const l4 = served === 'TLS' && terminated ? 'TCP' : served;
      for (const raw of served === 'TCP' ? serverHosts.slice(0, 1) : serverHosts) {
        const slash = raw.indexOf('/');
        const nsFilter = slash < 0 ? '*' : raw.slice(0, slash);
        const host = slash < 0 ? raw : raw.slice(slash + 1);
        const admits = (ns: string): boolean =>
          nsFilter === '*' || ns === (nsFilter === '.' ? gw.metadata.namespace : nsFilter);
        const hosts = new Map<string, RouteModel[]>();
        for (const vs of virtualServices) {
          if (!vs.gateways.includes(key) || !admits(vs.namespace)) continue;
          if (l4 === 'TLS' || l4 === 'TCP') {
            l4Hosts(l4, vs, serverHosts, host, portNumber, hosts);
            continue;
          }
          for (const vsHost of vs.hosts) {
            const h = meet(host, vsHost);
            if (h === undefined) continue;
            let list = hosts.get(h);
            if (list === undefined) hosts.set(h, (list = []));
            for (const r of vs.routes) if (r.port === 0 || r.port === portNumber) list.push(r.route);
          }
        }
        if (redirect !== undefined) {
          for (const h of hosts.keys()) hosts.set(h, [redirect]);
          if (!hosts.has(host)) hosts.set(host, [redirect]);
        }
        listeners.push({
          name: listenerName,
          port: portNumber,
          protocol: served,
          hostname: host === '*' || served === 'TCP' ? '' : host,
          credentialNames,
          ...(served === 'TLS' && terminated ? { terminate: true } : {}),
          ...clientCa,
          virtualHosts: [...hosts].map(([hostname, routes]) => ({ hostname, routes })),
        });
      }
    });
    for (const [p, pod] of proxies) {
      let l = out.get(p);
      if (l === undefined) out.set(p, (l = []));
      const listenPort = gatewayPortTranslation(pod, services);
      l.push(...listeners.map((x) => ({ ...x, port: listenPort(x.port) })));
    }
  }
  return { listeners: out, warnings };
}

/**
 * A VirtualService's `tls` or `tcp` routes on a passthrough TLS or a TCP server, as Envoy's filter chains from
 * Istio's gateway take them: for TLS, each SNI name of a route's match (else the VirtualService's hosts) that meets
 * the server host is a virtual host, taken by the first route that names it; for TCP, the first route (whose match
 * port, if any, is the server's) of a VirtualService whose hosts meet a server host takes every connection (`*`).
 */
function l4Hosts(
  served: 'TLS' | 'TCP',
  vs: ConvertedVirtualService,
  serverHosts: readonly string[],
  host: string,
  port: number,
  hosts: Map<string, RouteModel[]>,
): void {
  for (const r of served === 'TLS' ? vs.tlsRoutes : vs.tcpRoutes) {
    if (r.port !== 0 && r.port !== port) continue;
    if (served === 'TCP') {
      const bound = vs.hosts.some((h) => serverHosts.some((s) => meet(s.slice(s.indexOf('/') + 1), h) !== undefined));
      if (bound && !hosts.has('*')) hosts.set('*', [r.route]);
      continue;
    }
    for (const name of r.sniHosts.length > 0 ? r.sniHosts : vs.hosts) {
      const h = meet(host, name);
      if (h !== undefined && !hosts.has(h)) hosts.set(h, [r.route]);
    }
  }
}

/** The label by which a gateway's Service opts out of port translation. */
const DISABLE_PORT_TRANSLATION = 'experimental.istio.io/disable-gateway-port-translation';

/**
 * Where a gateway pod listens for a server's port, as istio `pilot/pkg/model/gateway.go` `resolvePorts` resolves it
 * for a Gateway that selects pods by label: the server's port is taken as a port of the Services that select the
 * pod (those without `experimental.istio.io/disable-gateway-port-translation`), and the first such port's target
 * port is listened on (a named target resolved through the pod's container ports); no such port: the server's own.
 * So a server on 80 listens on 8080 behind Istio's ingress gateway Service (80→8080).
 */
function gatewayPortTranslation(
  pod: ResourceOf<'Pod'>,
  services: readonly ResourceOf<'Service'>[],
): (port: number) => number {
  const named = containerPorts(pod);
  const targets: { port: number; target: number }[] = [];
  for (const s of services) {
    const selector = s.spec.selector ?? {};
    if (s.metadata.namespace !== pod.metadata.namespace || Object.keys(selector).length === 0) continue;
    if (DISABLE_PORT_TRANSLATION in s.metadata.labels) continue;
    if (!selectorMatches({ matchLabels: selector }, pod.metadata.labels)) continue;
    for (const p of servicePorts(s)) {
      const t = p.targetPort ?? p.port;
      const target = typeof t === 'number' ? t : named[t];
      if (target !== undefined) targets.push({ port: p.port, target });
    }
  }
  return (port) => targets.find((t) => t.port === port)?.target ?? port;
}
