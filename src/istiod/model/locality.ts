import type { Manifest } from '../registry/manifest-dir.js';
import type { LocalityModel } from './types.js';

/** Kubernetes' well-known node labels (`v1.LabelTopologyRegion`, `v1.LabelTopologyZone`) and Istio's subzone label. */
const REGION_LABEL = 'topology.kubernetes.io/region';
const ZONE_LABEL = 'topology.kubernetes.io/zone';
const SUBZONE_LABEL = 'topology.istio.io/subzone';

const locality = (region: string, zone: string, subzone: string): LocalityModel | undefined =>
  region === '' && zone === '' && subzone === '' ? undefined : { region, zone, subzone };

/**
 * A node's locality from its topology labels, as istio `pilot/pkg/serviceregistry/ambient/nodes.go` `nodeLocality`
 * reads it; unset when it has none of them. Pods take their node's locality (`getPodLocality` in `workloads.go`);
 * Istio's ambient controller does not read the `istio-locality` pod label.
 */
export function nodeLocality(node: Manifest): LocalityModel | undefined {
  const l = node.metadata.labels;
  return locality(l[REGION_LABEL] ?? '', l[ZONE_LABEL] ?? '', l[SUBZONE_LABEL] ?? '');
}

/**
 * A WorkloadEntry's `locality` (`region/zone/subzone`, trailing parts optional) as istio
 * `pilot/pkg/serviceregistry/util/label/label.go` `SplitLocalityLabel` splits it; unset when empty.
 */
export function parseLocality(s: string): LocalityModel | undefined {
  const [region = '', zone = '', subzone = ''] = s.split('/');
  return locality(region, zone, subzone);
}
