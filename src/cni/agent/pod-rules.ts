/**
 * The in-pod capture rules Istio's node agent writes into an ambient pod's network namespace (istio
 * `cni/pkg/iptables/iptables.go` AppendInpodRules, `iptables_linux.go`; the golden files
 * `cni/pkg/iptables/testdata/*.golden`): the mangle, nat and raw chains `ISTIO_PRERT` / `ISTIO_OUTPUT` that send
 * the pod's TCP to ztunnel's 15001 / 15006 / 15008 listeners and its DNS to 15053, unless a packet carries
 * ztunnel's mark 0x539; and the `ip rule` (fwmark 0x111 → table 100) with table 100's local route that brings the
 * app's replies to a spoofed inbound connection back to ztunnel. The per-pod annotations come from istio
 * `cni/pkg/nodeagent/net.go` getPodLevelTrafficOverrides.
 */
import net from 'node:net';
import { MeshError, type ErrorCode } from '../../lib/errors.js';
import { netnsId, type NetnsRef } from '../../native/native.js';
import { parseGoBool } from '../../lib/go-bool.js';
import { SerialQueue } from './serial-queue.js';
import {
  DNS_PROXY_PORT,
  HBONE_PORT,
  INBOUND_PLAINTEXT_PORT,
  INPOD_MARK,
  OUTBOUND_CAPTURE_PORT,
} from '../../lib/istio-ports.js';
import { IptablesRules, replaceChains, type IpFamily } from './iptables-rules.js';
import { mustRunInNetns, type CommandResult } from './netns-command.js';

export const INPOD_MASK = 0xfff;
/** The connmark / fwmark for connections ztunnel opened to the app, so the app's replies route back to ztunnel. */
export const INPOD_TPROXY_MARK = 0x111;
export const INPOD_TPROXY_MASK = 0xfff;
const INPOD_RESTORE_MASK = 0xffffffff;
/** The routing table of the local route for marked replies, and the priority of the `ip rule` that selects it. */
export const INPOD_ROUTE_TABLE = 100;
export const INPOD_RULE_PRIORITY = 32764;
/** Istio's chain names in the pod's tables. */
const CHAIN_PREROUTING = 'ISTIO_PRERT';
const CHAIN_OUTPUT = 'ISTIO_OUTPUT';
/** The source kubelet's probes are SNATed to on the node (istio `HOST_PROBE_SNAT_IP` / `HOST_PROBE_SNAT_IPV6`). */
export const DEFAULT_HOST_PROBE_SNAT_IP = '169.254.7.127';
export const DEFAULT_HOST_PROBE_SNAT_IPV6 = 'fd16:9254:7127:1337:ffff:ffff:ffff:ffff';

/** The pod annotations that change a pod's rules (istio `pkg/config/annotation`). */
export const ANNOTATION_DNS_CAPTURE = 'ambient.istio.io/dns-capture';
export const ANNOTATION_BYPASS_INBOUND_CAPTURE = 'ambient.istio.io/bypass-inbound-capture';
export const ANNOTATION_REROUTE_VIRTUAL_INTERFACES = 'istio.io/reroute-virtual-interfaces';

/** The agent-wide settings of the pod rules. */
export interface PodRulesConfig {
  /** `AMBIENT_DNS_CAPTURE`: capture the pod's DNS to ztunnel's 15053 unless its annotation says otherwise. */
  readonly dnsCapture: boolean;
  /** `AMBIENT_IPV6`: write the ip6tables rules and the IPv6 ip rule too. */
  readonly ipv6: boolean;
  readonly hostProbeSnatIp: string;
  readonly hostProbeSnatIpv6: string;
}

/** Istio's defaults: `ambient.dnsCapture` and `ambient.ipv6` are true in the istio-cni chart. */
export const DEFAULT_POD_RULES_CONFIG: PodRulesConfig = Object.freeze({
  dnsCapture: true,
  ipv6: true,
  hostProbeSnatIp: DEFAULT_HOST_PROBE_SNAT_IP,
  hostProbeSnatIpv6: DEFAULT_HOST_PROBE_SNAT_IPV6,
});

/** What one pod's annotations change in its rules. */
export interface PodTrafficOverrides {
  /** `bypass-inbound-capture`: no inbound redirection (ingress-style pods that take plaintext from outside). */
  readonly ingressMode: boolean;
  /** `dns-capture`: undefined follows the agent's `dnsCapture`. */
  readonly dnsCapture: boolean | undefined;
  /** `reroute-virtual-interfaces`: TCP arriving on these is treated as outbound (VMs, KubeVirt). */
  readonly virtualInterfaces: readonly string[];
  /** Annotations that were ignored, and why (Istio logs and ignores a boolean it cannot parse). */
  readonly warnings: readonly string[];
}

export const NO_OVERRIDES: PodTrafficOverrides = Object.freeze({
  ingressMode: false,
  dnsCapture: undefined,
  virtualInterfaces: [],
  warnings: [],
});

/** A Linux interface name iptables' `-i` takes (at most 15 bytes; `+` is iptables' wildcard). */
const INTERFACE_NAME = /^[A-Za-z0-9_.+-]{1,15}$/;

/**
 * The overrides a pod's annotations ask for. A boolean annotation that is not one of Go's booleans is ignored (with a
 * warning), as Istio does; an interface name that is not one fails with AGENT_ERR_POD_ANNOTATION, since it would
 * otherwise be written into the pod's rules.
 */
export function podTrafficOverrides(annotations: Readonly<Record<string, string>> | undefined): PodTrafficOverrides {
  const warnings: string[] = [];
  const bool = (name: string): boolean | undefined => {
    const value = annotations?.[name];
    if (value === undefined) return undefined;
    const parsed = parseGoBool(value);
    if (parsed === undefined) warnings.push(`annotation ${name}=${JSON.stringify(value)} is not a boolean; ignored`);
    return parsed;
  };
  const virtualInterfaces = (annotations?.[ANNOTATION_REROUTE_VIRTUAL_INTERFACES] ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  for (const name of virtualInterfaces) {
    if (!INTERFACE_NAME.test(name)) {
      throw new MeshError(
        'AGENT_ERR_POD_ANNOTATION',
        `annotation ${ANNOTATION_REROUTE_VIRTUAL_INTERFACES}: ${JSON.stringify(name)} is not a network interface name (1 to 15 of A-Z a-z 0-9 _ . + -)`,
      );
    }
  }
  return Object.freeze({
    ingressMode: bool(ANNOTATION_BYPASS_INBOUND_CAPTURE) ?? false,
    dnsCapture: bool(ANNOTATION_DNS_CAPTURE),
    virtualInterfaces,
    warnings,
  });
}

/** Fails with `code` unless the probe SNAT addresses are an IPv4 and an IPv6 literal (they go into rules as they are). */
export function checkProbeSnatIps(
  code: ErrorCode,
  ips: { readonly hostProbeSnatIp: string; readonly hostProbeSnatIpv6: string },
): void {
  if (!net.isIPv4(ips.hostProbeSnatIp))
    throw new MeshError(code, `HOST_PROBE_SNAT_IP ${JSON.stringify(ips.hostProbeSnatIp)} is not an IPv4 address`);
  if (!net.isIPv6(ips.hostProbeSnatIpv6))
    throw new MeshError(code, `HOST_PROBE_SNAT_IPV6 ${JSON.stringify(ips.hostProbeSnatIpv6)} is not an IPv6 address`);
}

const hex = (n: number): string => `0x${n.toString(16)}`;
const INPOD_MARK_MATCH = `${hex(INPOD_MARK)}/${hex(INPOD_MASK)}`;
const TPROXY_MARK_MATCH = `${hex(INPOD_TPROXY_MARK)}/${hex(INPOD_TPROXY_MASK)}`;

/** One family's in-pod rules, in the order Istio adds them (which fixes the order of the restore text). */
function inpodRules(config: PodRulesConfig, overrides: PodTrafficOverrides, family: IpFamily): IptablesRules {
  const dns = overrides.dnsCapture ?? config.dnsCapture;
  const localhost = family === 4 ? '127.0.0.1/32' : '::1/128';
  const probeSource = family === 4 ? config.hostProbeSnatIp : config.hostProbeSnatIpv6;
  const r = new IptablesRules();
  r.append('mangle', 'PREROUTING', '-j', CHAIN_PREROUTING);
  r.append('mangle', 'OUTPUT', '-j', CHAIN_OUTPUT);
  r.append('nat', 'OUTPUT', '-j', CHAIN_OUTPUT);
  if (dns) {
    r.append('raw', 'PREROUTING', '-j', CHAIN_PREROUTING);
    r.append('raw', 'OUTPUT', '-j', CHAIN_OUTPUT);
  }
  r.append('nat', 'PREROUTING', '-j', CHAIN_PREROUTING);
  // Inbound TCP on a virtual interface goes to ztunnel's outbound port, and stops there.
  for (const iface of overrides.virtualInterfaces) {
    r.append(
      'nat',
      CHAIN_PREROUTING,
      '-i',
      iface,
      '-p',
      'tcp',
      '-j',
      'REDIRECT',
      '--to-ports',
      String(OUTBOUND_CAPTURE_PORT),
    );
    r.append('nat', CHAIN_PREROUTING, '-i', iface, '-p', 'tcp', '-j', 'RETURN');
  }
  // Packets from ztunnel's own sockets mark their connection, so the app's replies can be routed back to it.
  r.append(
    'mangle',
    CHAIN_PREROUTING,
    '-m',
    'mark',
    '--mark',
    INPOD_MARK_MATCH,
    '-j',
    'CONNMARK',
    '--set-xmark',
    TPROXY_MARK_MATCH,
  );
  // Kubelet's probes arrive SNATed from the probe address and are not captured, nor are their replies.
  if (!overrides.ingressMode)
    r.append('nat', CHAIN_PREROUTING, '-s', probeSource, '-p', 'tcp', '-m', 'tcp', '-j', 'ACCEPT');
  r.append('nat', CHAIN_OUTPUT, '-d', probeSource, '-p', 'tcp', '-m', 'tcp', '-j', 'ACCEPT');
  // Inbound TCP, except HBONE to 15008 and ztunnel's own, goes to ztunnel's inbound plaintext port.
  if (!overrides.ingressMode) {
    r.append(
      'nat',
      CHAIN_PREROUTING,
      '!',
      '-d',
      localhost,
      '-p',
      'tcp',
      '!',
      '--dport',
      String(HBONE_PORT),
      '-m',
      'mark',
      '!',
      '--mark',
      INPOD_MARK_MATCH,
      '-j',
      'REDIRECT',
      '--to-ports',
      String(INBOUND_PLAINTEXT_PORT),
    );
  }
  r.append(
    'mangle',
    CHAIN_OUTPUT,
    '-m',
    'connmark',
    '--mark',
    TPROXY_MARK_MATCH,
    '-j',
    'CONNMARK',
    '--restore-mark',
    '--nfmask',
    hex(INPOD_RESTORE_MASK),
    '--ctmask',
    hex(INPOD_RESTORE_MASK),
  );
  if (dns) {
    r.append(
      'nat',
      CHAIN_OUTPUT,
      '!',
      '-o',
      'lo',
      '-p',
      'udp',
      '-m',
      'mark',
      '!',
      '--mark',
      INPOD_MARK_MATCH,
      '-m',
      'udp',
      '--dport',
      '53',
      '-j',
      'REDIRECT',
      '--to-port',
      String(DNS_PROXY_PORT),
    );
    r.append(
      'nat',
      CHAIN_OUTPUT,
      '!',
      '-d',
      localhost,
      '-p',
      'tcp',
      '--dport',
      '53',
      '-m',
      'mark',
      '!',
      '--mark',
      INPOD_MARK_MATCH,
      '-j',
      'REDIRECT',
      '--to-ports',
      String(DNS_PROXY_PORT),
    );
    // ztunnel's queries upstream and their answers get their own conntrack zone, apart from the app's (istio#33469).
    r.append(
      'raw',
      CHAIN_OUTPUT,
      '-p',
      'udp',
      '-m',
      'mark',
      '--mark',
      INPOD_MARK_MATCH,
      '-m',
      'udp',
      '--dport',
      '53',
      '-j',
      'CT',
      '--zone',
      '1',
    );
    r.append(
      'raw',
      CHAIN_PREROUTING,
      '-p',
      'udp',
      '-m',
      'mark',
      '!',
      '--mark',
      INPOD_MARK_MATCH,
      '-m',
      'udp',
      '--sport',
      '53',
      '-j',
      'CT',
      '--zone',
      '1',
    );
  }
  // The app's replies on connections ztunnel opened to it are not captured.
  r.append('nat', CHAIN_OUTPUT, '-p', 'tcp', '-m', 'mark', '--mark', TPROXY_MARK_MATCH, '-j', 'ACCEPT');
  // The app talking to its own pod IP over lo is not captured.
  r.append('nat', CHAIN_OUTPUT, '!', '-d', localhost, '-o', 'lo', '-j', 'ACCEPT');
  // Everything else the app sends over TCP goes to ztunnel's outbound port.
  r.append(
    'nat',
    CHAIN_OUTPUT,
    '!',
    '-d',
    localhost,
    '-p',
    'tcp',
    '-m',
    'mark',
    '!',
    '--mark',
    INPOD_MARK_MATCH,
    '-j',
    'REDIRECT',
    '--to-ports',
    String(OUTBOUND_CAPTURE_PORT),
  );
  return r;
}

/** The `iptables-restore` and `ip6tables-restore` input of a pod's rules; `v6` is undefined unless `config.ipv6`. */
export function renderPodRules(
  config: PodRulesConfig,
  overrides: PodTrafficOverrides,
): { v4: string; v6: string | undefined } {
  return {
    v4: inpodRules(config, overrides, 4).restoreText(),
    v6: config.ipv6 ? inpodRules(config, overrides, 6).restoreText() : undefined,
  };
}

const isIstioChain = (chain: string): boolean => chain.startsWith('ISTIO_');
const MARK_RULE = [
  'fwmark',
  TPROXY_MARK_MATCH,
  'pref',
  String(INPOD_RULE_PRIORITY),
  'lookup',
  String(INPOD_ROUTE_TABLE),
].join(' ');
const localRoute = (family: IpFamily): string =>
  `local ${family === 4 ? '0.0.0.0/0' : '::/0'} dev lo table ${INPOD_ROUTE_TABLE}`;

/**
 * Adds table 100's local route (when `withRoute`) and the fwmark ip rule for one family. The kernel refuses a second
 * identical rule (EEXIST), which means it is already there: re-applying never takes it away, even for a moment.
 */
async function addRouting(netns: NetnsRef, family: IpFamily, withRoute: boolean): Promise<void> {
  const lines = [...(withRoute ? [`route replace ${localRoute(family)}`] : []), `rule add ${MARK_RULE}`];
  const ruleWasThere = (r: CommandResult): boolean =>
    r.stderr.includes('File exists') && r.stderr.includes(`Command failed -:${lines.length}`);
  await mustRunInNetns(
    'AGENT_ERR_POD_RULES',
    netns,
    'ip',
    [`-${family}`, '-batch', '-'],
    lines.join('\n') + '\n',
    (r) => r.status === 0 || ruleWasThere(r),
  );
}

/** Deletes one family's ip rule, table 100 route and Istio chains, whichever exist. */
async function removeFamily(netns: NetnsRef, family: IpFamily): Promise<void> {
  const anyway = (): boolean => true;
  await mustRunInNetns(
    'AGENT_ERR_POD_RULES',
    netns,
    'ip',
    [`-${family}`, '-force', '-batch', '-'],
    `rule del ${MARK_RULE}\nroute del ${localRoute(family)}\n`,
    anyway,
  );
  await replaceChains('AGENT_ERR_POD_RULES', netns, family, isIstioChain);
}

/** With IPv6 off, ip6tables may not work in the pod at all; what an earlier run with it on left still goes if it does. */
const removeIpv6Leftovers = (netns: NetnsRef): Promise<void> => removeFamily(netns, 6).catch(() => undefined);

/** True unless `net.ipv6.conf.lo.disable_ipv6` is 1 in the namespace (Istio then skips the IPv6 local route). */
async function loopbackHasIpv6(netns: NetnsRef): Promise<boolean> {
  const disabled = await mustRunInNetns(
    'AGENT_ERR_POD_RULES',
    netns,
    'cat',
    ['/proc/sys/net/ipv6/conf/lo/disable_ipv6'],
    '',
    () => true,
  );
  return disabled.trim() !== '1';
}

/** One namespace's key, whichever path or fd names it; a path that is no netns keys by itself (the call then fails). */
function netnsKey(netns: NetnsRef): string {
  try {
    const { dev, ino } = netnsId(netns);
    return `${dev}:${ino}`;
  } catch {
    return String(netns);
  }
}

/**
 * Applies and removes Istio's in-pod rules in pods' network namespaces (a path, such as the CNI netns path or
 * `/proc/PID/ns/net`, or an open fd). Failures are AGENT_ERR_POD_RULES naming the namespace and quoting the tool's
 * stderr. Calls on one namespace (by its identity, whatever names it) run one at a time in call order: each reads
 * the rules before it writes them, and two at once would leave a mix.
 */
export class PodRules {
  private readonly queue = new SerialQueue();

  constructor(readonly config: PodRulesConfig = DEFAULT_POD_RULES_CONFIG) {
    checkProbeSnatIps('AGENT_ERR_POD_RULES', config);
  }

  /** The rules for a pod with these overrides, as `iptables-restore` input. */
  render(overrides: PodTrafficOverrides = NO_OVERRIDES): { v4: string; v6: string | undefined } {
    return renderPodRules(this.config, overrides);
  }

  /**
   * Writes the pod's rules, the ip rule and table 100's local route(s) into `netns`. Whatever `ISTIO_*` chains a
   * previous run left there are replaced in the same transaction, table by table, so applying again (an agent
   * restart's reconcile, changed annotations) ends with exactly these rules and never leaves the pod uncaptured.
   */
  apply(netns: NetnsRef, overrides: PodTrafficOverrides = NO_OVERRIDES): Promise<void> {
    return this.queue.run(netnsKey(netns), () => this.applyNow(netns, overrides));
  }

  private async applyNow(netns: NetnsRef, overrides: PodTrafficOverrides): Promise<void> {
    await addRouting(netns, 4, true);
    if (this.config.ipv6) await addRouting(netns, 6, await loopbackHasIpv6(netns));
    await replaceChains('AGENT_ERR_POD_RULES', netns, 4, isIstioChain, inpodRules(this.config, overrides, 4));
    if (this.config.ipv6)
      await replaceChains('AGENT_ERR_POD_RULES', netns, 6, isIstioChain, inpodRules(this.config, overrides, 6));
    else await removeIpv6Leftovers(netns);
  }

  /**
   * Takes the pod out of capture (un-enroll): deletes the jumps to every `ISTIO_*` chain in each table and flushes
   * and deletes those chains, for IPv4 and IPv6, and deletes the ip rule and table 100's local routes. What is
   * already gone is skipped, so removing twice is harmless.
   */
  remove(netns: NetnsRef): Promise<void> {
    return this.queue.run(netnsKey(netns), () => this.removeNow(netns));
  }

  private async removeNow(netns: NetnsRef): Promise<void> {
    await removeFamily(netns, 4);
    if (this.config.ipv6) await removeFamily(netns, 6);
    else await removeIpv6Leftovers(netns);
  }
}
