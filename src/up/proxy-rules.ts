/**
 * kube-proxy's iptables rules for one node (k8s.io/kubernetes `pkg/proxy/iptables/proxier.go`, its chain layout
 * and names): in the nat table, `KUBE-SERVICES` sends each Service port's ClusterIP to its `KUBE-SVC-<hash>`
 * chain, which picks one ready endpoint at random (`statistic --probability 1/n`, then 1/(n-1), ...) and jumps to
 * its `KUBE-SEP-<hash>` chain, which DNATs to the endpoint. NodePorts (addresses local to the node) go through
 * `KUBE-NODEPORTS` and `KUBE-EXT-<hash>`, and so do a LoadBalancer Service's ingress addresses. Traffic from outside the cluster CIDR, NodePort traffic and an endpoint
 * reaching itself through its Service are marked 0x4000 and masqueraded in `KUBE-POSTROUTING`. In the filter
 * table, a Service port without a ready endpoint is rejected, so clients get a refusal rather than a timeout.
 *
 * Chain hashes are base32 of SHA-256 over the service port name and protocol (and endpoint), as kube-proxy names
 * them. IPv4 only; `internalTrafficPolicy: Local` keeps the node's own endpoints; `externalTrafficPolicy`,
 * session affinity and topology hints are not read.
 */
import { createHash } from 'node:crypto';
import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { compareStrings } from '../lib/compare-strings.js';

const MASQ_MARK = '0x4000';
const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';
const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

/** RFC 4648 base32 of `bytes`, without padding. */
function base32(bytes: Uint8Array): string {
  let out = '';
  let bits = 0;
  let value = 0;
  for (const b of bytes) {
    value = (value << 8) | b;
    bits += 8;
    while (bits >= 5) {
      out += BASE32.charAt((value >>> (bits - 5)) & 31);
      bits -= 5;
    }
  }
  return bits > 0 ? out + BASE32.charAt((value << (5 - bits)) & 31) : out;
}

const chainHash = (s: string): string => base32(createHash('sha256').update(s).digest()).slice(0, 16);

/** What the rules are made from. */
export interface ProxyInputs {
  readonly services: readonly V1Service[];
  readonly slices: readonly V1EndpointSlice[];
  readonly node: string;
  readonly clusterCidr: string;
}

/** The nat and filter table rules, and the chains they declare (the ones a later sync must remove if gone). */
export interface ProxyRules {
  readonly nat: readonly string[];
  readonly filter: readonly string[];
  readonly natChains: readonly string[];
  readonly filterChains: readonly string[];
}

interface Endpoint {
  readonly ip: string;
  readonly port: number;
}

/** Ready endpoints of one Service port, by the port's name, from the Service's IPv4 EndpointSlices. */
function endpointsOf(svc: V1Service, portName: string, inputs: ProxyInputs): Endpoint[] {
  const local = svc.spec?.internalTrafficPolicy === 'Local';
  const out = new Map<string, Endpoint>();
  for (const es of inputs.slices) {
    if (
      es.metadata?.namespace !== svc.metadata?.namespace ||
      es.metadata?.labels?.[SERVICE_NAME_LABEL] !== svc.metadata?.name ||
      es.addressType !== 'IPv4'
    )
      continue;
    const port = es.ports?.find((p) => (p.name ?? '') === portName)?.port;
    if (port === undefined) continue;
    for (const ep of es.endpoints) {
      const ip = ep.addresses[0];
      if (ip === undefined || ep.conditions?.ready === false) continue;
      if (local && ep.nodeName !== inputs.node) continue;
      out.set(`${ip}:${String(port)}`, { ip, port });
    }
  }
  return [...out.values()].sort((a, b) => compareStrings(`${a.ip}:${String(a.port)}`, `${b.ip}:${String(b.port)}`));
}

/** Every rule of one node, for the Services and EndpointSlices it is given. */
export function proxyRules(inputs: ProxyInputs): ProxyRules {
  const natChains = ['KUBE-SERVICES', 'KUBE-NODEPORTS', 'KUBE-POSTROUTING', 'KUBE-MARK-MASQ'];
  const nat = [
    `-A KUBE-POSTROUTING -m mark ! --mark ${MASQ_MARK}/${MASQ_MARK} -j RETURN`,
    `-A KUBE-POSTROUTING -j MARK --xor-mark ${MASQ_MARK}`,
    '-A KUBE-POSTROUTING -m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE --random-fully',
    `-A KUBE-MARK-MASQ -j MARK --or-mark ${MASQ_MARK}`,
  ];
  const filterChains = ['KUBE-SERVICES'];
  const filter: string[] = [];
  const services = [...inputs.services].sort((a, b) =>
    compareStrings(
      `${a.metadata?.namespace ?? ''}/${a.metadata?.name ?? ''}`,
      `${b.metadata?.namespace ?? ''}/${b.metadata?.name ?? ''}`,
    ),
  );
  for (const svc of services) {
    const vip = svc.spec?.clusterIP ?? '';
    if (vip === '' || vip === 'None' || vip.includes(':') || svc.spec?.type === 'ExternalName') continue;
    for (const sp of svc.spec?.ports ?? []) {
      const protocol = (sp.protocol ?? 'TCP').toLowerCase();
      if (protocol === 'sctp') continue;
      const portName = `${svc.metadata?.namespace ?? ''}/${svc.metadata?.name ?? ''}:${sp.name ?? ''}`;
      const comment = `-m comment --comment "${portName}"`;
      const match = `-p ${protocol} -m ${protocol} --dport ${String(sp.port)}`;
      const endpoints = endpointsOf(svc, sp.name ?? '', inputs);
      if (endpoints.length === 0) {
        filter.push(`-A KUBE-SERVICES ${comment} -d ${vip}/32 ${match} -j REJECT --reject-with icmp-port-unreachable`);
        continue;
      }
      const svcChain = `KUBE-SVC-${chainHash(portName + protocol.toUpperCase())}`;
      natChains.push(svcChain);
      nat.push(`-A KUBE-SERVICES ${comment} -d ${vip}/32 ${match} -j ${svcChain}`);
      nat.push(`-A ${svcChain} ${comment} ! -s ${inputs.clusterCidr} -d ${vip}/32 ${match} -j KUBE-MARK-MASQ`);
      endpoints.forEach((ep, i) => {
        const target = `${ep.ip}:${String(ep.port)}`;
        const sepChain = `KUBE-SEP-${chainHash(portName + protocol.toUpperCase() + target)}`;
        natChains.push(sepChain);
        const left = endpoints.length - i;
        const pick = left > 1 ? ` -m statistic --mode random --probability ${(1 / left).toFixed(10)}` : '';
        nat.push(`-A ${svcChain} ${comment} -m comment --comment "-> ${target}"${pick} -j ${sepChain}`);
        nat.push(`-A ${sepChain} ${comment} -s ${ep.ip}/32 -j KUBE-MARK-MASQ`);
        nat.push(`-A ${sepChain} ${comment} -p ${protocol} -m ${protocol} -j DNAT --to-destination ${target}`);
      });
      const nodePort = typeof sp.nodePort === 'number' && sp.nodePort > 0 ? sp.nodePort : undefined;
      const ingress = (svc.status?.loadBalancer?.ingress ?? []).flatMap((i) => (i.ip === undefined ? [] : [i.ip]));
      if (nodePort === undefined && ingress.length === 0) continue;
      const extChain = `KUBE-EXT-${chainHash(portName + protocol.toUpperCase())}`;
      natChains.push(extChain);
      for (const lb of ingress) nat.push(`-A KUBE-SERVICES ${comment} -d ${lb}/32 ${match} -j ${extChain}`);
      if (nodePort !== undefined)
        nat.push(
          `-A KUBE-NODEPORTS ${comment} -p ${protocol} -m ${protocol} --dport ${String(nodePort)} -j ${extChain}`,
        );
      nat.push(`-A ${extChain} -j KUBE-MARK-MASQ`);
      nat.push(`-A ${extChain} -j ${svcChain}`);
    }
  }
  nat.push(
    '-A KUBE-SERVICES -m comment --comment "kubernetes service nodeports" -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS',
  );
  return { nat, filter, natChains, filterChains };
}

/**
 * The `iptables-restore --noflush` input that replaces this proxy's chains with `rules`: every chain declared
 * (so flushed), its rules, and the chains of the previous sync that are gone deleted.
 */
export function restoreInput(rules: ProxyRules, previous: ProxyRules | undefined): string {
  const table = (
    name: string,
    chains: readonly string[],
    lines: readonly string[],
    before: readonly string[],
  ): string[] => {
    const stale = before.filter((c) => !chains.includes(c));
    return [
      `*${name}`,
      ...[...chains, ...stale].map((c) => `:${c} - [0:0]`),
      ...lines,
      ...stale.map((c) => `-X ${c}`),
      'COMMIT',
    ];
  };
  return [
    ...table('nat', rules.natChains, rules.nat, previous?.natChains ?? []),
    ...table('filter', rules.filterChains, rules.filter, previous?.filterChains ?? []),
    '',
  ].join('\n');
}

const PORTALS = ['-m', 'comment', '--comment', 'kubernetes service portals', '-j', 'KUBE-SERVICES'];
const NEW_CONNECTIONS = ['-m', 'conntrack', '--ctstate', 'NEW'];

/** The jumps into this proxy's chains from the built-in ones, as `iptables` arguments (checked, then inserted). */
export const PROXY_JUMPS: readonly (readonly string[])[] = [
  ['-t', 'nat', 'PREROUTING', ...PORTALS],
  ['-t', 'nat', 'OUTPUT', ...PORTALS],
  ['-t', 'nat', 'POSTROUTING', '-m', 'comment', '--comment', 'kubernetes postrouting rules', '-j', 'KUBE-POSTROUTING'],
  ['-t', 'filter', 'OUTPUT', ...NEW_CONNECTIONS, ...PORTALS],
  ['-t', 'filter', 'FORWARD', ...NEW_CONNECTIONS, ...PORTALS],
];
