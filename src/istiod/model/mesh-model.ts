import type { Manifest } from '../registry/manifest-dir.js';
import { IncrementalMeshModel, type AddressModel, type ModelConfig } from './incremental-mesh-model.js';
import type { AuthorizationModel } from './types.js';

export type { ModelConfig };

/** What istiod serves, keyed by xDS resource name (istio `pilot/pkg/model/service.go`). */
export interface MeshModel {
  /** Address resources: workload uid, or `namespace/hostname` for services. */
  readonly addresses: ReadonlyMap<string, AddressModel>;
  /** Authorization resources: `namespace/name`. */
  readonly authorizations: ReadonlyMap<string, AuthorizationModel>;
  readonly warnings: readonly string[];
}

/** Builds the whole model from a set of objects at once (istio `pilot/pkg/serviceregistry/ambient/`). Pure: same objects, same model. */
export function buildMeshModel(objects: readonly Manifest[], cfg: ModelConfig): MeshModel {
  const model = new IncrementalMeshModel(cfg);
  const { warnings } = model.replaceAll(objects);
  return { addresses: model.addresses, authorizations: model.authorizations, warnings };
}
