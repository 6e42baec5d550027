import { Command } from '@commander-js/extra-typings';
import { loadKubeConfig } from '../kube/kube-config.js';
import { LogControl } from '../lib/log.js';
import { onStopSignal } from '../lib/stop-signals.js';
import { ClusterDns } from '../up/cluster-dns.js';
import { CLUSTER_DNS_DEFAULTS, loadClusterDnsConfig } from '../up/cluster-dns-config.js';
import { readResolvConf } from '../ztunnel/dns/resolv-conf.js';
import { fatal } from './fatal.js';

/**
 * `amesh cluster-dns`: the cluster's DNS server, what CoreDNS is behind `kube-system/kube-dns` on a kubeadm or kind
 * cluster: Services, endpoints and pods of the cluster domain from the Kubernetes API, every other name forwarded
 * to the resolv.conf's nameservers.
 */
export function clusterDnsCommand(): Command {
  const d = CLUSTER_DNS_DEFAULTS;
  return new Command('cluster-dns')
    .description(
      "serve the cluster's DNS (what CoreDNS serves as kube-dns): Services, endpoints and pods of the cluster domain, other names forwarded upstream",
    )
    .option('--listen <host:port>', 'DNS over UDP and TCP; the HTTP endpoints listen on its host too', d.listen)
    .option('--kubeconfig <file>', 'the API to watch (default: KUBECONFIG, else the in-cluster service account)')
    .option('--cluster-domain <domain>', 'the cluster domain', d.clusterDomain)
    .option('--resolv-conf <file>', 'whose nameservers names outside the cluster are forwarded to', d.resolvConf)
    .option('--ready-port <port>', '/ready: 200 once the Kubernetes informers synced', d.readyPort)
    .option('--health-port <port>', '/health: 200 while the process runs', d.healthPort)
    .option('--metrics-port <port>', "/metrics: CoreDNS's request metrics", d.metricsPort)
    .option('--log-level <level>', 'log level, or scope=level list', d.logLevel)
    .action(async (o) => {
      let logs: LogControl | undefined;
      try {
        const cfg = loadClusterDnsConfig(o);
        const kc = loadKubeConfig(cfg.kubeconfig);
        const upstream = await readResolvConf(cfg.resolvConf);
        logs = new LogControl({ format: cfg.logFormat, level: cfg.logLevel, component: 'cluster-dns' });
        const dns = await ClusterDns.start({
          kc,
          listen: cfg.listen,
          clusterDomain: cfg.clusterDomain,
          upstream,
          ports: { ready: cfg.readyPort, health: cfg.healthPort, metrics: cfg.metricsPort },
          logs,
        });
        const main = logs.scope('main');
        const a = dns.addresses();
        main.info(
          { dns: `${a.dns.address}:${a.dns.port}`, ready: a.ready, health: a.health, metrics: a.metrics },
          'cluster DNS started',
        );
        onStopSignal((signal) => {
          main.info({ signal }, 'stopping');
          void dns.stop().then(() => process.exit(0));
        });
      } catch (e) {
        fatal(e, logs);
      }
    });
}
