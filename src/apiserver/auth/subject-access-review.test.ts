import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError } from '../api-error.js';
import type { KubeObject } from '../kube-object.js';
import { BOOTSTRAP_POLICY_OBJECTS } from '../rbac/bootstrap-reconcile.js';
import { RbacCache } from '../rbac/rbac-cache.js';
import { RbacAuthorizer } from './authorizer.js';
import { reviewSubjectAccess } from './subject-access-review.js';

const RBAC = 'rbac.authorization.k8s.io';
/** The bootstrap policy, and istiod's right to review tokens as Istio's chart grants it. */
const AUTHORIZER = new RbacAuthorizer(
  RbacCache.of([
    ...BOOTSTRAP_POLICY_OBJECTS,
    {
      apiVersion: `${RBAC}/v1`,
      kind: 'ClusterRole',
      metadata: { name: 'istiod-clusterrole-istio-system' },
      rules: [{ apiGroups: ['authentication.k8s.io'], resources: ['tokenreviews'], verbs: ['create'] }],
    },
    {
      apiVersion: `${RBAC}/v1`,
      kind: 'ClusterRoleBinding',
      metadata: { name: 'istiod-clusterrole-istio-system' },
      roleRef: { apiGroup: RBAC, kind: 'ClusterRole', name: 'istiod-clusterrole-istio-system' },
      subjects: [{ kind: 'ServiceAccount', name: 'istiod', namespace: 'istio-system' }],
    },
  ]),
);
const review = (body: KubeObject): KubeObject => reviewSubjectAccess(body, AUTHORIZER);

const sar = (spec: Record<string, unknown>, metadata: KubeObject['metadata'] = {}): KubeObject => ({
  apiVersion: 'authorization.k8s.io/v1',
  kind: 'SubjectAccessReview',
  metadata,
  spec,
});
const status = (spec: Record<string, unknown>): unknown => review(sar(spec))['status'];

test('a SubjectAccessReview answers from the same rules: istiod may create tokenreviews, with the reason', () => {
  assert.deepEqual(
    status({
      user: 'system:serviceaccount:istio-system:istiod',
      resourceAttributes: { verb: 'create', group: 'authentication.k8s.io', resource: 'tokenreviews' },
    }),
    {
      allowed: true,
      reason:
        'RBAC: allowed by ClusterRoleBinding "istiod-clusterrole-istio-system" of ClusterRole "istiod-clusterrole-istio-system" to ServiceAccount "istiod/istio-system"',
    },
  );
});

test('a refused SubjectAccessReview is allowed: false, with no reason and no denied field', () => {
  assert.deepEqual(
    status({
      user: 'system:serviceaccount:istio-system:ztunnel',
      groups: ['system:serviceaccounts', 'system:authenticated'],
      resourceAttributes: { namespace: 'default', verb: 'list', resource: 'secrets' },
    }),
    { allowed: false },
  );
});

test("the user's groups are taken as given: system:authenticated grants discovery only when the review names it", () => {
  assert.deepEqual(status({ user: 'alice', nonResourceAttributes: { path: '/version', verb: 'get' } }), {
    allowed: false,
  });
  assert.equal(
    (
      status({
        user: 'alice',
        groups: ['system:authenticated'],
        nonResourceAttributes: { path: '/version', verb: 'get' },
      }) as { allowed: boolean }
    ).allowed,
    true,
  );
  assert.equal(
    (
      status({ groups: ['system:masters'], resourceAttributes: { verb: 'delete', resource: 'nodes', name: 'n' } }) as {
        allowed: boolean;
      }
    ).allowed,
    true,
  );
});

test("an invalid SubjectAccessReview is 422 with Kubernetes' field errors", () => {
  const invalid = (body: KubeObject, field: string, message: RegExp): void => {
    assert.throws(
      () => review(body),
      (e: unknown) =>
        e instanceof ApiError &&
        e.code === 422 &&
        e.details?.causes?.some((c) => c.field === field && message.test(c.message)) === true &&
        e.message.startsWith('SubjectAccessReview.authorization.k8s.io "" is invalid: '),
    );
  };
  invalid(
    sar({ user: 'a' }),
    'spec.resourceAttributes',
    /exactly one of nonResourceAttributes or resourceAttributes must be specified/,
  );
  invalid(
    sar({ user: 'a', resourceAttributes: { verb: 'get' }, nonResourceAttributes: { path: '/', verb: 'get' } }),
    'spec.nonResourceAttributes',
    /cannot be specified in combination with resourceAttributes/,
  );
  invalid(
    sar({ resourceAttributes: { verb: 'get', resource: 'pods' } }),
    'spec.user',
    /at least one of user or group must be specified/,
  );
  invalid(
    sar({ user: 'a', resourceAttributes: { verb: 'get', resource: 'pods' } }, { name: 'x' }),
    'metadata',
    /must be empty/,
  );
  assert.equal(
    (
      review(
        sar(
          { user: 'a', resourceAttributes: { verb: 'get', resource: 'pods' } },
          JSON.parse('{"creationTimestamp":null}') as KubeObject['metadata'],
        ),
      )['status'] as { allowed: boolean }
    ).allowed,
    false,
    'client-go\'s {"creationTimestamp":null} is empty metadata',
  );
});

test('a SubjectAccessReview without metadata is answered, not a server error', () => {
  const body = { apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview' } as unknown as KubeObject;
  const out = review({
    ...body,
    spec: {
      user: 'system:serviceaccount:istio-system:istiod',
      resourceAttributes: { group: 'authentication.k8s.io', resource: 'tokenreviews', verb: 'create' },
    },
  });
  assert.equal((out['status'] as { allowed: boolean }).allowed, true);
});
