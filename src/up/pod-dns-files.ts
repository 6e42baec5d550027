/**
 * The `/etc/hosts` and `/etc/resolv.conf` kubelet writes for each pod (kubernetes pkg/kubelet/kubelet_pods.go
 * managedHostsFileContent, pkg/kubelet/network/dns/dns.go GetPodDNS): the hosts file names the pod's own address
 * (with its `hostname.subdomain` FQDN) and its hostAliases; resolv.conf follows `dnsPolicy` and `dnsConfig`.
 * ClusterFirst uses the cluster's nameserver with the namespace's search path and `ndots:5`, and falls back to
 * the node's own resolv.conf while the cluster has no DNS, as kubelet does without `--cluster-dns`.
 */
import type { V1Pod } from '@kubernetes/client-node';

/** kubelet's clusterDomain default, as kind configures it. */
export const CLUSTER_DOMAIN = 'cluster.local';
/** At most this many search domains (kubelet's validation limit since 1.28's expanded DNS config). */
const MAX_SEARCH = 32;

/** The pod's hostname (spec.hostname, else its name). */
export const podHostname = (pod: V1Pod): string => pod.spec?.hostname ?? pod.metadata?.name ?? '';

/** The pod's hosts file; hostNetwork pods get the node's, so this is not asked for them. */
export function podHostsFile(pod: V1Pod, podIp: string, domain = CLUSTER_DOMAIN): string {
  const lines = [
    '# Kubernetes-managed hosts file.',
    '127.0.0.1\tlocalhost',
    '::1\tlocalhost ip6-localhost ip6-loopback',
    'fe00::0\tip6-localnet',
    'fe00::0\tip6-mcastprefix',
    'fe00::1\tip6-allnodes',
    'fe00::2\tip6-allrouters',
  ];
  const host = podHostname(pod);
  const sub = pod.spec?.subdomain;
  lines.push(
    sub === undefined || sub === ''
      ? `${podIp}\t${host}`
      : `${podIp}\t${host}.${sub}.${pod.metadata?.namespace ?? ''}.svc.${domain}\t${host}`,
  );
  const aliases = pod.spec?.hostAliases ?? [];
  if (aliases.length > 0) {
    lines.push('', '# Entries added by HostAliases.');
    for (const a of aliases) lines.push(`${a.ip}\t${(a.hostnames ?? []).join('\t')}`);
  }
  return lines.join('\n') + '\n';
}

interface ResolvConf {
  nameservers: string[];
  searches: string[];
  options: string[];
}

function parseResolvConf(text: string): ResolvConf {
  const r: ResolvConf = { nameservers: [], searches: [], options: [] };
  for (const line of text.split('\n')) {
    const [key, ...rest] = line
      .replace(/[#;].*$/, '')
      .trim()
      .split(/\s+/);
    if (key === 'nameserver' && rest[0] !== undefined) r.nameservers.push(rest[0]);
    else if (key === 'search' || key === 'domain') r.searches = rest;
    else if (key === 'options') r.options.push(...rest);
  }
  return r;
}

/**
 * The pod's resolv.conf: `nodeResolvConf` is the node's own, `clusterDns` the cluster nameserver's address
 * (undefined while there is none).
 */
export function podResolvConf(
  pod: V1Pod,
  nodeResolvConf: string,
  clusterDns: string | undefined,
  domain = CLUSTER_DOMAIN,
): string {
  const node = parseResolvConf(nodeResolvConf);
  const hostNetwork = pod.spec?.hostNetwork === true;
  let policy = pod.spec?.dnsPolicy ?? 'ClusterFirst';
  if (policy === 'ClusterFirst' && hostNetwork) policy = 'Default';
  if (policy === 'ClusterFirstWithHostNet') policy = 'ClusterFirst';
  if (policy === 'ClusterFirst' && clusterDns === undefined) policy = 'Default';
  let r: ResolvConf;
  if (policy === 'None') r = { nameservers: [], searches: [], options: [] };
  else if (policy === 'Default') r = node;
  else {
    const ns = pod.metadata?.namespace ?? '';
    r = {
      nameservers: [clusterDns!],
      searches: [`${ns}.svc.${domain}`, `svc.${domain}`, domain, ...node.searches],
      options: ['ndots:5'],
    };
  }
  const cfg = pod.spec?.dnsConfig;
  r.nameservers = [...new Set([...r.nameservers, ...(cfg?.nameservers ?? [])])];
  r.searches = [...new Set([...r.searches, ...(cfg?.searches ?? [])])].slice(0, MAX_SEARCH);
  const opts = new Map<string, string>();
  for (const o of r.options) opts.set(o.split(':')[0]!, o);
  for (const o of cfg?.options ?? [])
    opts.set(o.name ?? '', o.value === undefined ? (o.name ?? '') : `${o.name ?? ''}:${o.value}`);
  const lines: string[] = [];
  if (r.searches.length > 0) lines.push(`search ${r.searches.join(' ')}`);
  for (const n of r.nameservers) lines.push(`nameserver ${n}`);
  if (opts.size > 0) lines.push(`options ${[...opts.values()].join(' ')}`);
  return lines.join('\n') + '\n';
}
