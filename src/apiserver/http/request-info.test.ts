import { test } from 'node:test';
import assert from 'node:assert/strict';
import { requestInfo } from './request-info.js';

const info = (method: string, path: string): ReturnType<typeof requestInfo> =>
  requestInfo(method, new URL(path, 'https://x'));

test('request paths map to verbs, scopes and subresources as requestinfo.go maps them', () => {
  const cases: [string, string, Record<string, unknown>][] = [
    ['GET', '/api/v1/pods', { verb: 'list', group: '', plural: 'pods', namespace: undefined, name: undefined }],
    ['GET', '/api/v1/namespaces/default/pods', { verb: 'list', plural: 'pods', namespace: 'default' }],
    ['GET', '/api/v1/namespaces/default/pods?watch=true', { verb: 'watch', plural: 'pods', namespace: 'default' }],
    ['GET', '/api/v1/namespaces/default/pods?watch=True', { verb: 'watch', plural: 'pods' }],
    ['GET', '/api/v1/namespaces/default/pods?watch=false', { verb: 'list', plural: 'pods' }],
    ['GET', '/api/v1/watch/namespaces/default/pods', { verb: 'watch', plural: 'pods', namespace: 'default' }],
    ['GET', '/api/v1/namespaces/default/pods/a', { verb: 'get', name: 'a' }],
    ['PUT', '/api/v1/namespaces/default/pods/a/status', { verb: 'update', name: 'a', subresource: 'status' }],
    [
      'POST',
      '/api/v1/namespaces/ns/serviceaccounts/sa/token',
      { verb: 'create', plural: 'serviceaccounts', name: 'sa', subresource: 'token' },
    ],
    ['GET', '/api/v1/namespaces', { verb: 'list', plural: 'namespaces', namespace: undefined }],
    ['GET', '/api/v1/namespaces/foo', { verb: 'get', plural: 'namespaces', name: 'foo', namespace: undefined }],
    [
      'PUT',
      '/api/v1/namespaces/foo/status',
      { verb: 'update', plural: 'namespaces', name: 'foo', subresource: 'status' },
    ],
    [
      'PUT',
      '/api/v1/namespaces/foo/finalize',
      { verb: 'update', plural: 'namespaces', name: 'foo', subresource: 'finalize' },
    ],
    [
      'DELETE',
      '/apis/apps/v1/namespaces/x/deployments',
      { verb: 'deletecollection', group: 'apps', version: 'v1', plural: 'deployments' },
    ],
    [
      'PATCH',
      '/apis/security.istio.io/v1/namespaces/x/authorizationpolicies/p',
      { verb: 'patch', group: 'security.istio.io', name: 'p' },
    ],
    [
      'POST',
      '/apis/authentication.k8s.io/v1/tokenreviews',
      { verb: 'create', group: 'authentication.k8s.io', plural: 'tokenreviews' },
    ],
  ];
  for (const [method, path, want] of cases) {
    const got = info(method, path);
    assert.equal(got.resource, true, path);
    for (const [k, v] of Object.entries(want))
      assert.equal((got as unknown as Record<string, unknown>)[k], v, `${method} ${path} ${k}`);
  }
});

test('discovery, OpenAPI and health paths are non-resource requests', () => {
  for (const p of [
    '/api',
    '/apis',
    '/api/v1',
    '/apis/apps',
    '/apis/apps/v1',
    '/openapi/v3',
    '/version',
    '/readyz',
    '/livez',
  ]) {
    assert.equal(info('GET', p).resource, false, p);
  }
});
