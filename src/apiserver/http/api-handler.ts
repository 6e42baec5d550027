/**
 * The request pipeline of k8s.io/apiserver pkg/server/config.go's DefaultBuildHandlerChain, reduced to what
 * this server needs: authenticate (bearer tokens only: no token or a bad one is 401), authorize (403 with
 * Kubernetes' wording), then route to discovery, OpenAPI, health and version endpoints or to a resource. Any
 * failure becomes a `Status`; nothing a client sends can throw past this function.
 */
import type http from 'node:http';
import type { Logger } from '../../lib/log.js';
import { ApiError } from '../api-error.js';
import type { ResourceStore } from '../resource-store.js';
import { apiGroupDocument, apiGroupList, apiResourceList, apiVersions } from './discovery.js';
import type { OpenApiDocuments } from './openapi.js';
import { requestInfo, type RequestInfo } from './request-info.js';
import { handleResource, resolveKind, type ComputedResources } from './resource-handler.js';
import type { UserInfo } from '../auth/user-info.js';
import { sendError, sendJson, sendText } from './respond.js';

export interface ApiHandlerDeps {
  readonly store: ResourceStore;
  readonly computed: ComputedResources;
  readonly openapi: OpenApiDocuments;
  readonly version: unknown;
  readonly serverAddress: () => string;
  readonly ready: () => boolean;
  readonly authenticate: (authorization: string | undefined) => Promise<UserInfo | undefined>;
  /** The user the request acts as (impersonation headers), or a 403 when the caller may not impersonate it. */
  readonly impersonate: (user: UserInfo, headers: http.IncomingHttpHeaders) => UserInfo;
  /** Throws the 403 ApiError when `user` may not make the request. */
  readonly authorize: (user: UserInfo, info: RequestInfo) => void;
  readonly log: Logger;
}

export function apiHandler(d: ApiHandlerDeps): (req: http.IncomingMessage, res: http.ServerResponse) => void {
  return (req, res) => {
    const started = process.hrtime.bigint();
    serve(d, req, res)
      .catch((e: unknown) => {
        if (e instanceof ApiError) {
          sendError(res, e);
          return;
        }
        d.log.error(
          { method: req.method, path: req.url, err: e instanceof Error ? e.stack : String(e) },
          'request failed',
        );
        sendError(
          res,
          new ApiError('InternalError', 'an error on the server has prevented the request from succeeding'),
        );
      })
      .finally(() => {
        d.log.debug(
          {
            method: req.method,
            path: req.url,
            status: res.statusCode,
            ms: Number(process.hrtime.bigint() - started) / 1e6,
          },
          'request',
        );
      });
  };
}

/**
 * What anyone may read without credentials, as kube-apiserver's `system:public-info-viewer` ClusterRole grants it
 * to `system:unauthenticated`: health and version. Kubelets probe `/livez` and `/readyz` with no token.
 */
const PUBLIC_INFO_PATHS: ReadonlySet<string> = new Set(['/healthz', '/livez', '/readyz', '/version']);

/** A request path without its trailing slashes (`/` stays). */
const trimmedPath = (url: URL): string => url.pathname.replace(/\/+$/, '') || '/';

/** Answers GET `p`, one of PUBLIC_INFO_PATHS. */
function servePublicInfo(d: ApiHandlerDeps, res: http.ServerResponse, p: string): void {
  if (p === '/version') return sendJson(res, 200, d.version);
  if (p === '/readyz' && !d.ready()) return sendText(res, 500, 'readyz check failed');
  sendText(res, 200, 'ok');
}

async function serve(d: ApiHandlerDeps, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', 'https://apiserver');
  const p = trimmedPath(url);
  const read = req.method === 'GET' || req.method === 'HEAD';
  if (req.headers.authorization === undefined && read && PUBLIC_INFO_PATHS.has(p)) return servePublicInfo(d, res, p);
  const authenticated = await d.authenticate(req.headers.authorization);
  if (authenticated === undefined) throw new ApiError('Unauthorized', 'Unauthorized');
  const user = d.impersonate(authenticated, req.headers);
  const info = requestInfo(req.method ?? 'GET', url);
  if (info.resource) resolveKind(info);
  d.authorize(user, info);
  if (info.resource) {
    await handleResource(req, res, url, info, d.store, d.computed, user);
    return;
  }
  if (req.method !== 'GET' && req.method !== 'HEAD')
    throw new ApiError('MethodNotAllowed', 'the server does not allow this method on the requested resource');
  if (PUBLIC_INFO_PATHS.has(p)) return servePublicInfo(d, res, p);
  if (p === '/api') return sendJson(res, 200, apiVersions(d.serverAddress()));
  if (p === '/apis') return sendJson(res, 200, apiGroupList());
  if (p === '/openapi/v3') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(d.openapi.index);
    return;
  }
  if (p.startsWith('/openapi/v3/')) {
    const doc = d.openapi.document(p.slice('/openapi/v3/'.length));
    if (doc === undefined) throw new ApiError('NotFound', 'the server could not find the requested resource');
    res.writeHead(200, { 'content-type': 'application/json', etag: `"${url.searchParams.get('hash') ?? ''}"` });
    res.end(doc);
    return;
  }
  const doc = discoveryDocument(p.split('/').filter((s) => s !== ''));
  if (doc === undefined) throw new ApiError('NotFound', 'the server could not find the requested resource');
  sendJson(res, 200, doc);
}

/** The discovery document at `/api/<version>`, `/apis/<group>` or `/apis/<group>/<version>`; undefined if unserved. */
function discoveryDocument(parts: readonly string[]): unknown {
  if (parts[0] === 'api' && parts.length === 2) return apiResourceList('', parts[1] ?? '');
  if (parts[0] === 'apis' && parts.length === 2) return apiGroupDocument(parts[1] ?? '');
  if (parts[0] === 'apis' && parts.length === 3) return apiResourceList(parts[1] ?? '', parts[2] ?? '');
  return undefined;
}
