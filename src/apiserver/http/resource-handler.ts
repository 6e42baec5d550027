/**
 * Serves one resource request (k8s.io/apiserver pkg/endpoints/handlers: get.go, create.go, update.go, patch.go,
 * delete.go, watch.go): decodes the body and query, calls the resource store, and encodes the answer as JSON, a
 * Table for `kubectl get`, a watch stream, or a Status. Review kinds (TokenReview, SubjectAccessReview) and the
 * serviceaccounts/token subresource are answered by the handlers passed in, never stored.
 */
import type http from 'node:http';
import { ApiError, invalid } from '../api-error.js';
import { findKind } from '../kinds.js';
import type { KindInfo } from '../kind-info.js';
import type { KubeObject } from '../kube-object.js';
import { PATCH_TYPES, type DeleteOptions, type PatchType, type ResourceStore } from '../resource-store.js';
import { queryBool, type ResourceRequest } from './request-info.js';
import type { UserInfo } from '../auth/user-info.js';
import type { AdmissionContext, FieldValidation } from '../admission/webhook-admission.js';
import { parseJsonBody, parseObjectBody, readBody, sendJson } from './respond.js';
import { toTable, wantsTable, type IncludeObject } from './table.js';
import { serveWatch } from './watch-stream.js';
import { inServedVersion, storageKindOf, toStoredVersion } from '../version-conversion.js';

/** Requests answered by computation rather than storage. */
export interface ComputedResources {
  /** POST serviceaccounts/<name>/token: a TokenRequest with `status.token`. */
  tokenRequest(namespace: string, serviceAccount: string, body: KubeObject): Promise<KubeObject>;
  /** POST of a review kind (TokenReview, SubjectAccessReview): the review with its `status`. */
  review(k: KindInfo, body: KubeObject, user: UserInfo): Promise<KubeObject>;
}

const INCLUDE_OBJECT: readonly IncludeObject[] = ['None', 'Metadata', 'Object'];
/** DeleteOptions.propagationPolicy values. */
const PROPAGATION_POLICIES: readonly string[] = ['Foreground', 'Background', 'Orphan'];

/**
 * The verbs each subresource serves (status and scale: get, update, patch; token and binding: create; a
 * Namespace's finalize: update).
 */
const SUBRESOURCE_VERBS: Readonly<Record<string, readonly string[]>> = {
  status: ['get', 'update', 'patch'],
  scale: ['get', 'update', 'patch'],
  token: ['create'],
  binding: ['create'],
  finalize: ['update'],
};

export function resolveKind(r: ResourceRequest): KindInfo {
  const k = findKind(r.group, r.version, r.plural);
  if (k === undefined) throw new ApiError('NotFound', 'the server could not find the requested resource');
  if (r.subresource !== undefined) {
    const served =
      (k.subresources as readonly string[]).includes(r.subresource) ||
      (k.kind === 'Namespace' && r.subresource === 'finalize');
    if (!served) throw new ApiError('NotFound', 'the server could not find the requested resource');
    if (!(SUBRESOURCE_VERBS[r.subresource] ?? []).includes(r.verb))
      throw new ApiError('MethodNotAllowed', 'the server does not allow this method on the requested resource');
  }
  if (k.kind === 'Namespace' && k.group === '' && r.verb === 'deletecollection')
    throw new ApiError('MethodNotAllowed', 'the server does not allow this method on the requested resource');
  if (k.namespaced && r.namespace === undefined && r.verb !== 'list' && r.verb !== 'watch') {
    throw new ApiError('NotFound', 'the server could not find the requested resource');
  }
  if (!k.namespaced && r.namespace !== undefined)
    throw new ApiError('NotFound', 'the server could not find the requested resource');
  if (k.review && r.verb !== 'create')
    throw new ApiError('MethodNotAllowed', `the server does not allow this method on the requested resource`);
  return k;
}

function patchTypeOf(contentType: string | undefined): PatchType {
  const t = (contentType ?? '').split(';')[0]?.trim();
  for (const [name, media] of Object.entries(PATCH_TYPES)) if (media === t) return name as PatchType;
  throw new ApiError(
    'UnsupportedMediaType',
    `the body of the request was in an unknown format - accepted media types include: ${Object.values(PATCH_TYPES).join(', ')}`,
  );
}

function deleteOptions(body: Buffer, url: URL): DeleteOptions {
  const parsed = body.length > 0 ? parseJsonBody(body, 'application/json') : {};
  const o = (typeof parsed === 'object' && parsed !== null ? parsed : {}) as {
    preconditions?: { resourceVersion?: string; uid?: string };
    propagationPolicy?: string;
    orphanDependents?: boolean;
    gracePeriodSeconds?: unknown;
  };
  const policy =
    url.searchParams.get('propagationPolicy') ??
    o.propagationPolicy ??
    (o.orphanDependents === true ? 'Orphan' : undefined);
  if (policy !== undefined && !PROPAGATION_POLICIES.includes(policy)) {
    throw invalid('DeleteOptions', 'meta.k8s.io', '', [
      {
        reason: 'FieldValueNotSupported',
        field: 'propagationPolicy',
        message: `Unsupported value: "${policy}": supported values: ${PROPAGATION_POLICIES.map((p) => `"${p}"`).join(', ')}`,
      },
    ]);
  }
  const dryRun =
    isDryRun(url) ||
    (Array.isArray((o as { dryRun?: unknown }).dryRun) && (o as { dryRun: unknown[] }).dryRun.includes('All'));
  const graceQuery = url.searchParams.get('gracePeriodSeconds');
  const grace = graceQuery !== null ? Number(graceQuery) : o.gracePeriodSeconds;
  if (grace !== undefined && grace !== null && !(typeof grace === 'number' && Number.isInteger(grace)))
    throw new ApiError('BadRequest', `invalid gracePeriodSeconds: ${JSON.stringify(graceQuery ?? grace)}`);
  const gracePeriodSeconds = typeof grace === 'number' ? grace : undefined;
  return { preconditions: o.preconditions, propagationPolicy: policy, dryRun, gracePeriodSeconds };
}

function selectors(url: URL): { labelSelector: string | undefined; fieldSelector: string | undefined } {
  return {
    labelSelector: url.searchParams.get('labelSelector') ?? undefined,
    fieldSelector: url.searchParams.get('fieldSelector') ?? undefined,
  };
}

/** A watch on one named object is a watch with `metadata.name=<name>` (k8s.io/apiserver handlers/get.go). */
function watchSelectors(
  url: URL,
  name: string | undefined,
): { labelSelector: string | undefined; fieldSelector: string | undefined } {
  const s = selectors(url);
  if (name === undefined) return s;
  const byName = `metadata.name=${name}`;
  if (s.fieldSelector !== undefined && s.fieldSelector !== '' && s.fieldSelector !== byName) {
    throw new ApiError(
      'BadRequest',
      `fieldSelector ${s.fieldSelector} does not match the name of the watched object (${byName})`,
    );
  }
  return { ...s, fieldSelector: byName };
}

function isDryRun(url: URL): boolean {
  const d = url.searchParams.getAll('dryRun');
  for (const v of d)
    if (v !== 'All') throw new ApiError('BadRequest', `dryRun: Unsupported value: "${v}": supported values: "All"`);
  return d.length > 0;
}

const FIELD_VALIDATION: readonly FieldValidation[] = ['Ignore', 'Strict', 'Warn'];

/** The `fieldValidation` query parameter; kube-apiserver takes its absence as Warn (handlers/rest.go). */
function fieldValidation(url: URL): FieldValidation {
  const v = url.searchParams.get('fieldValidation');
  if (v === null || v === '') return 'Warn';
  if (!(FIELD_VALIDATION as readonly string[]).includes(v))
    throw new ApiError(
      'BadRequest',
      `fieldValidation: Unsupported value: "${v}": supported values: ${FIELD_VALIDATION.map((f) => `"${f}"`).join(', ')}`,
    );
  return v as FieldValidation;
}

export async function handleResource(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  url: URL,
  r: ResourceRequest,
  store: ResourceStore,
  computed: ComputedResources,
  user: UserInfo,
): Promise<void> {
  // Another served version of a custom kind reads and writes the stored one; only apiVersion differs on the way.
  const served = resolveKind(r);
  const k = storageKindOf(served);
  const ns = k.namespaced ? r.namespace : undefined;
  const name = r.name ?? '';
  const writes = r.verb === 'create' || r.verb === 'update' || r.verb === 'patch';
  const context: AdmissionContext = {
    user,
    warnings: [],
    ...(writes ? { fieldValidation: fieldValidation(url) } : {}),
    ...(served !== k ? { requestKind: served } : {}),
  };
  const reply = (status: number, o: object): void => {
    if (context.warnings.length > 0) res.setHeader('warning', context.warnings.map(warningHeader));
    sendJson(res, status, inServedVersion(served, o));
  };
  if (r.subresource === 'scale') {
    if (r.verb === 'get') return reply(200, store.getScale(k, ns, name));
    if (r.verb === 'update') {
      const body = parseObjectBody(await readBody(req), req.headers['content-type']) as KubeObject;
      return reply(200, await store.updateScale(k, ns, name, body, isDryRun(url)));
    }
    const patch = parseJsonBody(await readBody(req), 'application/json');
    return reply(
      200,
      await store.patchScale(k, ns, name, patchTypeOf(req.headers['content-type']), patch, isDryRun(url)),
    );
  }
  switch (r.verb) {
    case 'get': {
      const o = store.get(k, ns, name);
      if (wantsTable(req.headers.accept))
        sendJson(
          res,
          200,
          toTable(k, [inServedVersion(served, o)], o.metadata.resourceVersion ?? '', includeObject(url)),
          'application/json;as=Table;v=v1;g=meta.k8s.io',
        );
      else reply(200, o);
      return;
    }
    case 'list': {
      const list = store.list(k, ns, selectors(url));
      if (wantsTable(req.headers.accept))
        sendJson(
          res,
          200,
          toTable(
            k,
            list.items.map((o) => inServedVersion(served, o)),
            list.metadata.resourceVersion,
            includeObject(url),
          ),
          'application/json;as=Table;v=v1;g=meta.k8s.io',
        );
      else sendJson(res, 200, inServedVersion(served, list));
      return;
    }
    case 'watch': {
      const timeout = url.searchParams.get('timeoutSeconds');
      const timeoutSeconds = timeout === null ? undefined : Number(timeout);
      if (timeoutSeconds !== undefined && !(Number.isInteger(timeoutSeconds) && timeoutSeconds >= 0))
        throw new ApiError('BadRequest', `timeoutSeconds: Invalid value: "${timeout ?? ''}"`);
      const sendInitialEvents = url.searchParams.get('sendInitialEvents');
      serveWatch(req, res, store, served, ns, {
        resourceVersion: url.searchParams.get('resourceVersion') ?? undefined,
        timeoutSeconds,
        allowWatchBookmarks: queryBool(url, 'allowWatchBookmarks'),
        sendInitialEvents: sendInitialEvents === null ? undefined : queryBool(url, 'sendInitialEvents'),
        resourceVersionMatch: url.searchParams.get('resourceVersionMatch') ?? undefined,
        selectors: watchSelectors(url, r.name),
        table: wantsTable(req.headers.accept) ? includeObject(url) : undefined,
      });
      return;
    }
    case 'create': {
      const body = toStoredVersion(
        served,
        parseObjectBody(await readBody(req), req.headers['content-type']) as KubeObject,
      );
      if (r.subresource === 'token') {
        reply(201, await computed.tokenRequest(ns ?? '', name, body));
        return;
      }
      if (r.subresource === 'binding') {
        await store.bindPod(ns ?? '', name, body);
        reply(201, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', code: 201 });
        return;
      }
      if (k.review) {
        reply(201, await computed.review(k, body, user));
        return;
      }
      if (r.name !== undefined)
        throw new ApiError('MethodNotAllowed', 'the server does not allow this method on the requested resource');
      reply(201, await store.create(k, ns, body, isDryRun(url), context));
      return;
    }
    case 'update': {
      const body = toStoredVersion(
        served,
        parseObjectBody(await readBody(req), req.headers['content-type']) as KubeObject,
      );
      reply(200, await store.update(k, ns, name, body, { subresource: r.subresource, dryRun: isDryRun(url), context }));
      return;
    }
    case 'patch': {
      const type = patchTypeOf(req.headers['content-type']);
      const patch = toStoredVersion(served, parseJsonBody(await readBody(req), 'application/json'));
      reply(
        200,
        await store.patch(k, ns, name, type, patch, { subresource: r.subresource, dryRun: isDryRun(url), context }),
      );
      return;
    }
    case 'delete': {
      const opts = deleteOptions(await readBody(req), url);
      reply(200, await store.delete(k, ns, name, { ...opts, context }));
      return;
    }
    case 'deletecollection': {
      const opts = deleteOptions(await readBody(req), url);
      reply(200, await store.deleteCollection(k, ns, selectors(url), { ...opts, context }));
      return;
    }
  }
}

/** A webhook's warning as an RFC 7234 `Warning` header, as the API server sends it (code 299, agent `-`). */
function warningHeader(text: string): string {
  return `299 - "${text.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

function includeObject(url: URL): IncludeObject {
  const v = url.searchParams.get('includeObject') ?? 'Metadata';
  if (!(INCLUDE_OBJECT as readonly string[]).includes(v))
    throw new ApiError('BadRequest', `includeObject: Unsupported value: "${v}"`);
  return v as IncludeObject;
}
