import type { Strategy } from './strategy.js';
import { keepStatus } from './generation.js';

/**
 * Nodes, after k8s.io/kubernetes `pkg/registry/core/node/strategy.go`: an update of the main resource keeps the
 * stored status, which the kubelet writes through the `status` subresource. Node names are DNS subdomains
 * (`validation/object-meta.ts`).
 */
export const nodeStrategy: Strategy = {
  prepareForUpdate(obj, old) {
    keepStatus(obj, old);
  },
};
