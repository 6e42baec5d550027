/**
 * The `pod-template-hash` a Deployment's ReplicaSet is named and labelled with (k8s.io/kubernetes
 * `pkg/controller/controller_utils.go` ComputeHash): FNV-1a (32 bit) over the pod template, then the
 * Deployment's collision count as 8 little-endian bytes when it has one, written in decimal and mapped to
 * name-safe characters. Kubernetes hashes a dump of its Go struct, which no other program can reproduce, so
 * this hashes the template's canonical JSON (keys sorted): the same form and the same stability (an unchanged
 * template keeps its hash), not the same value.
 */
import { safeEncodeString } from '../lib/safe-encode.js';
import { compareStrings } from '../lib/compare-strings.js';

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

function fnv1a(h: number, bytes: Uint8Array): number {
  for (const b of bytes) h = Math.imul(h ^ b, FNV_PRIME) >>> 0;
  return h;
}

/** JSON with object keys sorted at every level, so equal templates give equal text whatever their key order. */
function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    const entries = Object.entries(v as Record<string, unknown>).filter(([, x]) => x !== undefined);
    return `{${entries
      .sort(([a], [b]) => compareStrings(a, b))
      .map(([k, x]) => `${JSON.stringify(k)}:${canonicalJson(x)}`)
      .join(',')}}`;
  }
  return JSON.stringify(v);
}

export function podTemplateHash(template: unknown, collisionCount?: number): string {
  let h = fnv1a(FNV_OFFSET, new TextEncoder().encode(canonicalJson(template)));
  if (collisionCount !== undefined) {
    const bytes = new Uint8Array(8);
    new DataView(bytes.buffer).setUint32(0, collisionCount >>> 0, true);
    h = fnv1a(h, bytes);
  }
  return safeEncodeString(String(h));
}
