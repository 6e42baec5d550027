import type { ResourceOf } from '../registry/manifest-dir.js';

/** What can serve a hostname: a Kubernetes Service, or a ServiceEntry for each of its hosts. */
export type HostOwner = ResourceOf<'Service'> | ResourceOf<'ServiceEntry'>;

/**
 * Which object serves a hostname, as istio `pilot/pkg/serviceregistry/ambient/services.go`
 * `selectWorkloadServices` resolves the Services and ServiceEntries that share one: in each namespace one winner,
 * a Kubernetes Service if there is one, else the oldest ServiceEntry; of the winners across namespaces one is
 * canonical, the Kubernetes Service if there is one, else the oldest. A ServiceEntry that loses a host sends
 * neither that Service nor workloads for it.
 */
export interface ServiceSelection {
  /** `owner` won `hostname` in its namespace. */
  serves(owner: HostOwner, hostname: string): boolean;
  /** `owner`'s service for `hostname` is the one canonical service of that hostname. */
  isCanonical(owner: HostOwner, hostname: string): boolean;
  /** ServiceEntry hosts that lost, with the object that won their namespace. */
  readonly shadowed: readonly { readonly owner: HostOwner; readonly hostname: string; readonly by: HostOwner }[];
}
