/**
 * Turns a request path and method into what it asks for, after k8s.io/apiserver
 * pkg/endpoints/request/requestinfo.go: resource requests (`/api/v1/...`, `/apis/<group>/<version>/...`) get a
 * verb, group, version, namespace, resource, name and subresource; everything else is a non-resource request
 * (discovery, OpenAPI, health) that keeps its path.
 */
export type ResourceVerb = 'get' | 'list' | 'watch' | 'create' | 'update' | 'patch' | 'delete' | 'deletecollection';

export interface ResourceRequest {
  readonly resource: true;
  readonly verb: ResourceVerb;
  readonly group: string;
  readonly version: string;
  readonly namespace: string | undefined;
  readonly plural: string;
  readonly name: string | undefined;
  readonly subresource: string | undefined;
}

export interface NonResourceRequest {
  readonly resource: false;
  readonly verb: string;
  readonly path: string;
}

export type RequestInfo = ResourceRequest | NonResourceRequest;

/** Values Go's strconv.ParseBool takes as true, which is how the API server reads boolean query parameters. */
const TRUE_VALUES = new Set(['1', 't', 'T', 'TRUE', 'true', 'True']);

/** A boolean query parameter (`watch=True` from python's client, `watch=true` from Go's). */
export function queryBool(url: URL, name: string): boolean {
  return TRUE_VALUES.has(url.searchParams.get(name) ?? '');
}

/** Namespace subresources that name the namespace itself rather than a resource inside it. */
const NAMESPACE_SUBRESOURCES = new Set(['status', 'finalize']);

export function requestInfo(method: string, url: URL): RequestInfo {
  const nonResource = (): NonResourceRequest => ({ resource: false, verb: method.toLowerCase(), path: url.pathname });
  let parts = url.pathname.split('/').filter((p) => p !== '');
  let group: string;
  if (parts[0] === 'api') {
    group = '';
    parts = parts.slice(1);
  } else if (parts[0] === 'apis' && parts.length >= 2) {
    group = parts[1] ?? '';
    parts = parts.slice(2);
  } else {
    return nonResource();
  }
  const version = parts[0];
  if (version === undefined || parts.length < 2) return nonResource();
  parts = parts.slice(1);
  let watchPath = false;
  if (parts[0] === 'watch') {
    watchPath = true;
    parts = parts.slice(1);
  }
  let namespace: string | undefined;
  if (parts[0] === 'namespaces' && parts.length > 1) {
    namespace = parts[1];
    if (parts.length > 2 && !NAMESPACE_SUBRESOURCES.has(parts[2] ?? '')) parts = parts.slice(2);
  }
  const [plural, name, subresource] = parts;
  if (plural === undefined || parts.length > 3) return nonResource();
  // `/api/v1/namespaces/foo` and `/api/v1/namespaces/foo/status` name the namespace foo, not a namespace scope.
  if (plural === 'namespaces') namespace = undefined;
  const isWatch = watchPath || queryBool(url, 'watch');
  let verb: ResourceVerb;
  switch (method) {
    case 'GET':
    case 'HEAD':
      if (isWatch) verb = 'watch';
      else verb = name === undefined ? 'list' : 'get';
      break;
    case 'POST':
      verb = 'create';
      break;
    case 'PUT':
      verb = 'update';
      break;
    case 'PATCH':
      verb = 'patch';
      break;
    case 'DELETE':
      verb = name === undefined ? 'deletecollection' : 'delete';
      break;
    default:
      return nonResource();
  }
  return { resource: true, verb, group, version, namespace, plural, name, subresource };
}
