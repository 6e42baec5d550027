import { readFileSync } from 'node:fs';
import path from 'node:path';
import {
  DEFAULT_POD_RULES_CONFIG,
  NO_OVERRIDES,
  type PodRulesConfig,
  type PodTrafficOverrides,
} from '../../src/cni/agent/pod-rules.js';
import { packageRoot } from '../../src/lib/package-root.js';

const GOLDEN_DIR = path.join(packageRoot(), 'test', 'golden');

/** A file under test/golden/ without its `#` header lines. */
export function readGolden(relative: string): string {
  return readFileSync(path.join(GOLDEN_DIR, relative), 'utf8')
    .split('\n')
    .filter((l) => !l.startsWith('#'))
    .join('\n');
}

/** The IPv6 probe address istio `cni/pkg/iptables/iptables_test.go` renders its golden files with. */
export const ISTIO_TEST_PROBE_SNAT_IPV6 = 'e9ac:1e77:90ca:399f:4d6d:ece2:2f9b:3164';

export interface PodRulesCase {
  /** The golden file's name in istio `cni/pkg/iptables/testdata/` (and test/golden/pod-rules/). */
  readonly name: string;
  readonly config: PodRulesConfig;
  readonly overrides: PodTrafficOverrides;
}

const FAKE_VIRTUAL_INTERFACES = ['fake1s0f0', 'fake1s0f1'];

/** Istio's in-pod cases (istio `cni/pkg/iptables/common_test.go`), with the agent's DNS capture and the pod's overrides. */
export const POD_RULES_CASES: readonly PodRulesCase[] = [
  { name: 'default', dns: true, overrides: {} },
  { name: 'ingress', dns: false, overrides: { ingressMode: true } },
  { name: 'virtual_interfaces', dns: false, overrides: { virtualInterfaces: FAKE_VIRTUAL_INTERFACES } },
  {
    name: 'ingress_and_virtual_interfaces',
    dns: false,
    overrides: { ingressMode: true, virtualInterfaces: FAKE_VIRTUAL_INTERFACES },
  },
  { name: 'dns_pod_enabled_and_off_globally', dns: false, overrides: { dnsCapture: true } },
  { name: 'dns_pod_disabled_and_on_globally', dns: true, overrides: { dnsCapture: false } },
].map(({ name, dns, overrides }) => ({
  name,
  config: { ...DEFAULT_POD_RULES_CONFIG, dnsCapture: dns },
  overrides: { ...NO_OVERRIDES, ...overrides },
}));
