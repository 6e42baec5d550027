/**
 * The reviews a caller asks about itself: SelfSubjectAccessReview (`kubectl auth can-i`), answered as a
 * SubjectAccessReview for the requesting user (kubernetes pkg/registry/authorization/selfsubjectaccessreview),
 * and SelfSubjectReview (`kubectl auth whoami`), which returns the user the request authenticated as
 * (pkg/registry/authentication/selfsubjectreview).
 */
import { ApiError } from '../api-error.js';
import type { KubeObject } from '../kube-object.js';
import type { Authorizer } from './authorizer.js';
import { reviewSubjectAccess } from './subject-access-review.js';
import type { UserInfo } from './user-info.js';
import { kubeTime } from '../../lib/kube-time.js';
import { isRecord } from '../../lib/record.js';

export function reviewSelfSubjectAccess(body: KubeObject, user: UserInfo, authorizer: Authorizer): KubeObject {
  const spec = body['spec'] ?? {};
  if (!isRecord(spec))
    throw new ApiError(
      'BadRequest',
      'SelfSubjectAccessReview in version "v1" cannot be handled as a SelfSubjectAccessReview: spec is not an object',
    );
  const asSar = reviewSubjectAccess(
    {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SubjectAccessReview',
      metadata: {},
      spec: {
        ...spec,
        user: user.username,
        ...(user.uid !== undefined ? { uid: user.uid } : {}),
        groups: [...user.groups],
        extra: user.extra ?? {},
      },
    },
    authorizer,
  );
  return {
    apiVersion: 'authorization.k8s.io/v1',
    kind: 'SelfSubjectAccessReview',
    metadata: body.metadata,
    spec,
    status: asSar['status'],
  };
}

export function reviewSelf(user: UserInfo): KubeObject {
  return {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'SelfSubjectReview',
    metadata: { creationTimestamp: kubeTime() },
    status: {
      userInfo: {
        username: user.username,
        ...(user.uid !== undefined ? { uid: user.uid } : {}),
        groups: [...user.groups],
        ...(user.extra !== undefined ? { extra: user.extra } : {}),
      },
    },
  };
}
