/**
 * kubelet's file source of static pods (k8s.io/kubernetes pkg/kubelet/config/file.go and common.go): each
 * `.yaml`, `.yml` or `.json` file in the node's manifest directory is one Pod that the kubelet runs on its own,
 * with or without an API server, as kubeadm runs the control plane. As kubelet does, each pod is named
 * `<name>-<node>`, defaults to namespace `default`, is bound to the node, tolerates every NoExecute taint, and gets
 * a uid that hashes its manifest, node and file (also its `kubernetes.io/config.hash`), so a changed manifest is a
 * new pod. A file that is not one Pod is skipped with the reason, as kubelet logs and skips it.
 */
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { describeError } from '../lib/errors.js';

/** The annotations kubelet gives a static pod (pkg/kubelet/types/pod_update.go). */
export const CONFIG_HASH_ANNOTATION = 'kubernetes.io/config.hash';
export const CONFIG_SOURCE_ANNOTATION = 'kubernetes.io/config.source';
export const CONFIG_SEEN_ANNOTATION = 'kubernetes.io/config.seen';

const MANIFEST = /\.(ya?ml|json)$/;

export interface StaticPods {
  readonly pods: readonly V1Pod[];
  /** `file: why` for each manifest that is not one Pod. */
  readonly errors: readonly string[];
}

/** The static pod of manifest `doc` read from `file` for node `node`; throws what is wrong with it. */
export function staticPod(doc: unknown, file: string, node: string): V1Pod {
  const pod = doc as V1Pod | null;
  if (pod === null || typeof pod !== 'object' || Array.isArray(pod)) throw new Error('not a YAML or JSON object');
  if (pod.kind !== 'Pod' || pod.apiVersion !== 'v1')
    throw new Error(`holds ${String(pod.apiVersion)}/${String(pod.kind)}, not a v1 Pod`);
  const name = pod.metadata?.name ?? '';
  if (name === '') throw new Error('the Pod has no metadata.name');
  if ((pod.spec?.containers ?? []).length === 0) throw new Error('the Pod has no containers');
  const uid = createHash('md5').update(JSON.stringify(pod)).update(`host:${node}`).update(`file:${file}`).digest('hex');
  const out = structuredClone(pod);
  const meta = (out.metadata ??= {});
  meta.name = `${name}-${node.toLowerCase()}`;
  meta.namespace ??= 'default';
  meta.uid = uid;
  meta.annotations = Object.assign(meta.annotations ?? {}, {
    [CONFIG_HASH_ANNOTATION]: uid,
    [CONFIG_SOURCE_ANNOTATION]: 'file',
    [CONFIG_SEEN_ANNOTATION]: new Date().toISOString(),
  });
  const spec = out.spec!;
  spec.nodeName = node;
  spec.tolerations = [...(spec.tolerations ?? []), { operator: 'Exists', effect: 'NoExecute' }];
  return out;
}

/** The static pods of directory `dir` (none when it does not exist), in file name order. */
export async function readStaticPods(dir: string, node: string): Promise<StaticPods> {
  const files = (await readdir(dir).catch(() => [])).filter((f) => MANIFEST.test(f) && !f.startsWith('.')).sort();
  const pods: V1Pod[] = [];
  const errors: string[] = [];
  for (const f of files) {
    const file = path.join(dir, f);
    try {
      const docs = parseAllDocuments(await readFile(file, 'utf8'));
      if (!Array.isArray(docs) || docs.length !== 1)
        throw new Error(`holds ${String(Array.isArray(docs) ? docs.length : 0)} documents, not one Pod`);
      const [doc] = docs;
      if (doc!.errors.length > 0) throw new Error(doc!.errors[0]!.message);
      pods.push(staticPod(doc!.toJS(), file, node));
    } catch (e) {
      errors.push(`${file}: ${describeError(e)}`);
    }
  }
  return { pods, errors };
}
