import { parseListenAddress, type ListenAddress } from '../lib/address.js';
import { MeshError } from '../lib/errors.js';
import { LogControl, parseLogFormat, type LogFormat } from '../lib/log.js';

/**
 * `amesh cluster-dns`'s defaults: CoreDNS's as kubeadm deploys it (`.:53`, the ready plugin's 8181, the health
 * plugin's 8080, `prometheus :9153`, `forward . /etc/resolv.conf`) and the cluster domain kubeadm defaults to.
 */
export const CLUSTER_DNS_DEFAULTS = Object.freeze({
  listen: '0.0.0.0:53',
  clusterDomain: 'cluster.local',
  resolvConf: '/etc/resolv.conf',
  readyPort: '8181',
  healthPort: '8080',
  metricsPort: '9153',
  logLevel: 'info',
});

export interface ClusterDnsConfig {
  /** Where DNS is served, UDP and TCP; the HTTP endpoints listen on its host too. */
  readonly listen: ListenAddress;
  /** The API to watch; undefined: KUBECONFIG, else the in-cluster service account (`loadKubeConfig`). */
  readonly kubeconfig: string | undefined;
  readonly clusterDomain: string;
  readonly resolvConf: string;
  /** `/ready` (200 once the informers synced), `/health` (always 200) and `/metrics`. */
  readonly readyPort: number;
  readonly healthPort: number;
  readonly metricsPort: number;
  readonly logLevel: string;
  readonly logFormat: LogFormat;
}

export interface ClusterDnsFlags {
  readonly listen?: string;
  readonly kubeconfig?: string;
  readonly clusterDomain?: string;
  readonly resolvConf?: string;
  readonly readyPort?: string;
  readonly healthPort?: string;
  readonly metricsPort?: string;
  readonly logLevel?: string;
}

const DNS_LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

function port(value: string, flag: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n > 65_535)
    throw new MeshError('AMESH_ERR_CONFIG', `--${flag}: "${value}" is not a port (0 to 65535)`);
  return n;
}

/** The cluster domain as kubelet's `--cluster-domain` takes it: DNS-1123 labels, lowercase, without a trailing dot. */
function clusterDomain(value: string): string {
  const d = value.replace(/\.$/, '').toLowerCase();
  if (d === '' || d.length > 253 || !d.split('.').every((l) => DNS_LABEL.test(l)))
    throw new MeshError('AMESH_ERR_CONFIG', `--cluster-domain: "${value}" is not a DNS domain (such as cluster.local)`);
  return d;
}

export function loadClusterDnsConfig(
  flags: ClusterDnsFlags,
  env: Readonly<Record<string, string | undefined>> = process.env,
): ClusterDnsConfig {
  const d = CLUSTER_DNS_DEFAULTS;
  const logLevel = flags.logLevel ?? d.logLevel;
  LogControl.parseSpec(logLevel);
  return Object.freeze({
    listen: parseListenAddress(flags.listen ?? d.listen, '--listen'),
    kubeconfig: flags.kubeconfig,
    clusterDomain: clusterDomain(flags.clusterDomain ?? d.clusterDomain),
    resolvConf: flags.resolvConf ?? d.resolvConf,
    readyPort: port(flags.readyPort ?? d.readyPort, 'ready-port'),
    healthPort: port(flags.healthPort ?? d.healthPort, 'health-port'),
    metricsPort: port(flags.metricsPort ?? d.metricsPort, 'metrics-port'),
    logLevel,
    logFormat: parseLogFormat(env),
  });
}
