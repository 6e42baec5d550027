import type { Logger } from 'pino';
import { MeshError } from '../../lib/errors.js';
import type { DnsUpstreamSockets } from '../dns/dns-forwarder.js';
import type { DnsMetrics } from '../dns/dns-metrics.js';
import { DnsProxy } from '../dns/dns-proxy.js';
import { DNS_PROXY_PORT } from '../../lib/istio-ports.js';
import { podDnsListen, podUpstreamSockets } from '../dns/dns-sockets.js';
import type { UpstreamConfig } from '../dns/resolv-conf.js';
import type { ProxyState } from '../state/proxy-state.js';
import type { PodDnsStarter } from './inpod-proxies.js';

export interface PodDnsSettings {
  readonly state: ProxyState;
  /** The nameservers ztunnel itself uses (its resolv.conf), where names it does not own go. */
  readonly upstream: UpstreamConfig;
  /** One set for every pod's proxy. */
  readonly metrics: DnsMetrics;
  readonly clusterDomain: string;
  readonly ipv6Enabled: boolean;
  readonly log: Logger;
}

/**
 * Each pod's DNS proxy on 15053 inside its network namespace (ztunnel `src/proxyfactory.rs` starts a `dns::Server`
 * per in-pod proxy), answering as the pod's workload (its namespace for search domains, its network for VIPs).
 */
export function podDnsStarter(s: PodDnsSettings): PodDnsStarter {
  return async (pod) => {
    let closed = false;
    const inner = podUpstreamSockets(pod.netns, pod.mark);
    // After the pod stops, its netns fd is closed (and its number may be reused): no query may make a socket with it.
    const stopped = (): MeshError =>
      new MeshError('ZT_ERR_POD_STOPPED', `pod ${pod.uid} stopped: no upstream DNS socket in its network namespace`);
    const upstreamSockets: DnsUpstreamSockets = {
      udp: (family) => (closed ? Promise.reject(stopped()) : inner.udp(family)),
      tcp: (family) => {
        if (closed) throw stopped();
        return inner.tcp(family);
      },
    };
    const proxy = new DnsProxy({
      state: s.state,
      client: () => pod.local.current(),
      listen: podDnsListen(pod.netns, DNS_PROXY_PORT, { mark: pod.mark, reusePort: pod.reusePort }),
      upstream: s.upstream,
      upstreamSockets,
      metrics: s.metrics,
      clusterDomain: s.clusterDomain,
      ipv6Enabled: s.ipv6Enabled,
      log: s.log,
    });
    await proxy.start();
    return {
      close: () => {
        closed = true;
        void proxy.close();
      },
    };
  };
}
