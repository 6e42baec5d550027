/**
 * OpenAPI v3 documents (`/openapi/v3` and one per group version), as kube-openapi serves them, enough for
 * kubectl: each kind's paths carry `x-kubernetes-group-version-kind` and the `fieldValidation` parameter, from
 * which kubectl learns that the server validates fields itself (kubectl's QueryParamVerifierV3), and each kind
 * has a component schema. Schemas are open objects: kubectl takes strategic-merge metadata for built-in kinds
 * from its own compiled types when a schema names none.
 */
import { createHash } from 'node:crypto';
import { apiVersionOf, servedKinds, servedKindsRevision } from '../kinds.js';
import type { KindInfo } from '../kind-info.js';
import { supportsStrategicMergePatch } from '../strategic-merge-patch.js';
import { customResourceSource } from '../schema/custom-resource-schemas.js';
import { OBJECT_META_NAME, OBJECT_META_REF, OBJECT_META_SCHEMA } from './openapi-object-meta.js';

function gvPath(group: string, version: string): string {
  return group === '' ? `api/${version}` : `apis/${group}/${version}`;
}

/** The component name kube-openapi uses: `io.k8s.api.core.v1.Pod`, `io.istio.security.v1.AuthorizationPolicy`. */
function schemaName(k: KindInfo): string {
  if (k.group === '') return `io.k8s.api.core.${k.version}.${k.kind}`;
  if (k.group.endsWith('.k8s.io') && !k.group.startsWith('gateway.'))
    return `io.k8s.api.${k.group.split('.')[0] ?? ''}.${k.version}.${k.kind}`;
  if (!k.group.includes('.')) return `io.k8s.api.${k.group}.${k.version}.${k.kind}`;
  return `${k.group.split('.').reverse().join('.')}.${k.version}.${k.kind}`;
}

const QUERY = (name: string): unknown => ({ name, in: 'query', schema: { type: 'string', uniqueItems: true } });
const PATH = (name: string): unknown => ({
  name,
  in: 'path',
  required: true,
  schema: { type: 'string', uniqueItems: true },
});

function documentFor(group: string, version: string): unknown {
  const kinds = servedKinds().filter((k) => k.group === group && k.version === version);
  const paths: Record<string, unknown> = {};
  const schemas: Record<string, unknown> = {};
  for (const k of kinds) {
    const gvk = [{ group: k.group, version: k.version, kind: k.kind }];
    const ref = { $ref: `#/components/schemas/${schemaName(k)}` };
    const body = { content: { 'application/json': { schema: ref } } };
    const ok = { responses: { '200': { description: 'OK', content: { 'application/json': { schema: ref } } } } };
    const op = (action: string, extra: object = {}): unknown => ({
      'x-kubernetes-action': action,
      'x-kubernetes-group-version-kind': gvk[0],
      ...ok,
      ...extra,
    });
    const writeParams = [QUERY('dryRun'), QUERY('fieldManager'), QUERY('fieldValidation')];
    const base = `/${gvPath(group, version)}${k.namespaced ? '/namespaces/{namespace}' : ''}/${k.plural}`;
    const scope = k.namespaced ? [PATH('namespace')] : [];
    paths[base] = k.review
      ? { parameters: scope, post: op('post', { requestBody: body, parameters: writeParams }) }
      : { parameters: scope, get: op('list'), post: op('post', { requestBody: body, parameters: writeParams }) };
    if (!k.review) {
      paths[`${base}/{name}`] = {
        parameters: [PATH('name'), ...scope],
        get: op('get'),
        put: op('put', { requestBody: body, parameters: writeParams }),
        patch: op('patch', {
          requestBody: {
            // kubectl apply sends a strategic merge patch only where the document offers one (custom kinds
            // take merge patches, as CRDs' documents say).
            content: {
              'application/json-patch+json': { schema: { type: 'object' } },
              'application/merge-patch+json': { schema: { type: 'object' } },
              ...(supportsStrategicMergePatch(k)
                ? { 'application/strategic-merge-patch+json': { schema: { type: 'object' } } }
                : {}),
            },
          },
          parameters: [...writeParams, QUERY('force')],
        }),
        delete: op('delete'),
      };
      for (const sub of k.subresources)
        if (sub === 'status')
          paths[`${base}/{name}/status`] = {
            parameters: [PATH('name'), ...scope],
            get: op('get'),
            put: op('put', { requestBody: body, parameters: writeParams }),
            patch: op('patch', { parameters: writeParams }),
          };
    }
    const custom = k.schema !== undefined ? { schema: k.schema } : customResourceSource(k.group, k.kind);
    schemas[schemaName(k)] =
      custom === undefined
        ? {
            type: 'object',
            description: `${k.kind} (${apiVersionOf(k)})`,
            properties: { apiVersion: { type: 'string' }, kind: { type: 'string' }, metadata: { type: 'object' } },
            'x-kubernetes-group-version-kind': gvk,
          }
        : {
            ...custom.schema,
            properties: {
              apiVersion: { type: 'string', description: 'The versioned schema of this object: group/version.' },
              kind: { type: 'string', description: 'The REST resource this object represents.' },
              metadata: { allOf: [{ $ref: OBJECT_META_REF }], description: 'Standard object metadata.' },
              ...custom.schema.properties,
            },
            'x-kubernetes-group-version-kind': gvk,
          };
    if (custom !== undefined) schemas[OBJECT_META_NAME] = OBJECT_META_SCHEMA;
  }
  return { openapi: '3.0.0', info: { title: 'Kubernetes', version: 'unversioned' }, paths, components: { schemas } };
}

/** The `/openapi/v3` index and the documents it points at, built again only when the served kinds change. */
export class OpenApiDocuments {
  private docs = new Map<string, string>();
  private builtFor = -1;
  private indexText = '';

  /** The index of the group-version documents, each with the hash of its content. */
  get index(): string {
    this.refresh();
    return this.indexText;
  }

  /** The document for `api/v1` or `apis/<group>/<version>`, if served. */
  document(path: string): string | undefined {
    this.refresh();
    return this.docs.get(path);
  }

  private refresh(): void {
    if (this.builtFor === servedKindsRevision()) return;
    this.builtFor = servedKindsRevision();
    const docs = new Map<string, string>();
    const paths: Record<string, { serverRelativeURL: string }> = {};
    for (const k of servedKinds()) {
      const p = gvPath(k.group, k.version);
      if (docs.has(p)) continue;
      const text = JSON.stringify(documentFor(k.group, k.version));
      docs.set(p, text);
      const hash = createHash('sha512').update(text).digest('hex').toUpperCase();
      paths[p] = { serverRelativeURL: `/openapi/v3/${p}?hash=${hash}` };
    }
    this.docs = docs;
    this.indexText = JSON.stringify({ paths });
  }
}
