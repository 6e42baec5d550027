/** What examples/local-mesh (the manifests of `amesh demo --socks5`) says, for tests that check it was applied. */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { packageRoot } from '../../src/lib/package-root.js';

const WORKLOADS = path.join(packageRoot(), 'examples', 'local-mesh', 'workloads.yaml');

interface PodDoc {
  kind?: string;
  metadata?: { name?: string; namespace?: string };
  status?: { podIP?: string };
}

/** The pod IP the example reports for `namespace/name`: one of the demo's own loopback addresses. */
export function localMeshPodIp(namespace: string, name: string): string {
  for (const d of parseAllDocuments(readFileSync(WORKLOADS, 'utf8'))) {
    const o = d.toJS() as PodDoc | null;
    if (o?.kind === 'Pod' && o.metadata?.namespace === namespace && o.metadata.name === name && o.status?.podIP)
      return o.status.podIP;
  }
  throw new Error(`examples/local-mesh/workloads.yaml has no pod ${namespace}/${name} with a podIP`);
}
