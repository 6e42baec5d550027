/**
 * The loopback addresses each integration test file may use, so that files running at the same time never bind
 * the same address and port. A file that names any loopback address other than 127.0.0.1 owns the block
 * 127.N.0.0/16 listed here and uses addresses of that block only; inside it, it binds whatever it needs, Istio's
 * fixed ports included (15001, 15006, 15008, 15053, 15080 on its workload IPs). Shared by everyone: 127.0.0.1 with
 * port 0 (the kernel picks a free port). Fixed ports on [::1] (the only IPv6 loopback address) belong to
 * test/ipv6.test.ts; elsewhere [::1] is used with port 0 or inside a throwaway network namespace, where loopback is
 * the namespace's own. address-block.test.ts checks the files against this table.
 *
 * Everything else a test makes lives in a throwaway network namespace (TestNetns: a random name under /run/netns,
 * its own links, routes, iptables chains and ipsets) or a mkdtemp directory (UDS paths, state, CNI caches), so
 * files cannot meet there. The exceptions are in the host's namespace: test/cni-agent-netns.test.ts's veth
 * amesh93h (10.93.255.1/30), the way from its in-process API server to an agent in a node namespace; and
 * test/gateway-proxy.test.ts's gateway, which binds every address (as a gateway pod binds every address of its
 * namespace) on ports 17080, 17081 and 17443-17445, which no other file uses.
 */
export const ADDRESS_BLOCKS: Readonly<Record<string, number>> = Object.freeze({
  'test/hbone-two-ztunnels.test.ts': 20,
  'test/hbone-pool.test.ts': 30,
  'test/cert-rotation.test.ts': 31,
  'test/hbone-python-h2.test.ts': 32,
  'test/bad-input.test.ts': 33,
  'test/hbone-goaway.test.ts': 35,
  'test/ztunnel-admin.test.ts': 36,
  'test/outbound-hostname.test.ts': 38,
  'test/ipv6.test.ts': 39,
  'test/istiod-ca.test.ts': 60,
  'test/istiod-grpcio.test.ts': 61,
  'test/istiod-ztunnel.test.ts': 62,
  'test/hbone-connection-lost.test.ts': 70,
  'test/go-interop.test.ts': 71,
  'test/authorization-fail-closed.test.ts': 72,
  'test/control-plane-recovery.test.ts': 73,
  'test/istiod-locality-serviceentry.test.ts': 74,
  'test/xds-incremental-policy.test.ts': 75,
  'test/hbone-mixed-load.test.ts': 76,
  'test/istiod-connection-caps.test.ts': 77,
  'test/istiod-grpc-limits.test.ts': 78,
  'test/socks5-listener.test.ts': 79,
  'test/istiod-xds.test.ts': 80,
  'test/kube-informer.test.ts': 82,
  'test/istiod-kube.test.ts': 83,
  'test/istiod-kube-ca.test.ts': 84,
  'test/ztunnel-zds-protocol-error.test.ts': 85,
  'test/native-netns.test.ts': 86,
  'test/zds-go-interop.test.ts': 90,
  'test/zds.test.ts': 91,
  'test/netns-cache-proc.test.ts': 92,
  'test/cni-agent-enrollment.test.ts': 93,
  'test/istiod-config-dir.test.ts': 94,
  'test/dns-proxy.test.ts': 95,
  'test/cni-agent-netns.test.ts': 96,
  'test/dns-proxy-lifecycle.test.ts': 97,
  'test/socket-options.test.ts': 102,
  'test/cni-agent-token-file.test.ts': 103,
  'test/h2-session.test.ts': 105,
  'test/h2-conformance.test.ts': 106,
  'test/h2-python-interop.test.ts': 107,
  'test/ztunnel-footprint.test.ts': 113,
  'test/cluster-dns.test.ts': 114,
  'test/istiod-ip-autoallocate.test.ts': 87,
  'test/image.test.ts': 121,
  'test/ztunnel-waypoint-grpcio.test.ts': 122,
  'test/waypoint-proxy.test.ts': 123,
  'test/gateway-proxy.test.ts': 124,
});

/**
 * The loopback literals in `text` other than 127.0.0.1: four octets, or the first three of a prefix an address is
 * built from (`127.71.1` in `${net}.2`), also when written as a regular expression (`127\.71\.1`).
 */
export function loopbackLiterals(text: string): string[] {
  return [...text.replaceAll('\\.', '.').matchAll(/(?<![\d.])127\.\d{1,3}\.\d{1,3}(?:\.\d{1,3})?(?![\d])/g)]
    .map((m) => m[0])
    .filter((a) => a !== '127.0.0.1');
}

/** Whether `address` (or a prefix of one) lies in 127.`block`.0.0/16. */
export function inBlock(address: string, block: number): boolean {
  return address.split('.')[1] === String(block);
}
