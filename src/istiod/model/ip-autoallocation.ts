/**
 * Which ServiceEntries get addresses allocated by istiod and where those addresses are kept, as istio
 * `pilot/pkg/networking/serviceentry/ip_autoallocation.go` decides: the allocator (`ip-autoallocator.ts`) writes
 * them to `status.addresses`, one `{value, host}` per address, and the ambient index serves them as the VIPs of
 * the ServiceEntry's hosts (istio `pilot/pkg/serviceregistry/ambient/services.go`).
 */
import { canonicalIp } from '../../lib/ip.js';
import type { ResourceOf } from '../registry/manifest-dir.js';

type ServiceEntry = ResourceOf<'ServiceEntry'>;

/** A ServiceEntry labelled with "false" (any case) opts out (istio.io/api `label.NetworkingEnableAutoallocateIp`). */
export const ENABLE_AUTOALLOCATE_IP_LABEL = 'networking.istio.io/enable-autoallocate-ip';

/**
 * Whether `se` is one whose hosts get allocated addresses (`ShouldV2AutoAllocateIP`): the feature is on
 * (`PILOT_ENABLE_IP_AUTOALLOCATE`), its resolution is not NONE (unset is NONE: the dataplane would not know the
 * address the application dialled), it did not opt out, and it gives no `spec.addresses` of its own.
 */
export function shouldAutoAllocateIp(se: ServiceEntry, enabled: boolean): boolean {
  if (!enabled || (se.spec.resolution ?? 'NONE') === 'NONE') return false;
  if (se.metadata.labels[ENABLE_AUTOALLOCATE_IP_LABEL]?.toLowerCase() === 'false') return false;
  return (se.spec.addresses?.length ?? 0) === 0;
}

/** A wildcard host takes an allocated address only under DYNAMIC_DNS resolution (ipallocate.go `keepHost`). */
export function takesAutoAllocatedAddress(se: ServiceEntry, host: string): boolean {
  return !host.startsWith('*') || se.spec.resolution === 'DYNAMIC_DNS';
}

/**
 * `status.addresses` by host, in canonical form and in the order written (`GetHostAddressesFromServiceEntry`);
 * a value that is not an IP is skipped, and a host with none is absent.
 */
export function autoAllocatedAddresses(se: ServiceEntry): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const a of se.status.addresses ?? []) {
    const ip = canonicalIp(a?.value ?? '');
    if (ip === undefined) continue;
    const host = a?.host ?? '';
    out.set(host, [...(out.get(host) ?? []), ip]);
  }
  return out;
}
