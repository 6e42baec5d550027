/**
 * SubjectAccessReview (authorization.k8s.io/v1): may this user do this? Answered from the same authorizer as
 * requests, as kubernetes pkg/registry/authorization/subjectaccessreview/rest.go does, with its validation
 * (pkg/apis/authorization/validation: exactly one of resourceAttributes and nonResourceAttributes, a user or a
 * group, empty metadata) and pkg/registry/authorization/util (the attributes, with the user and groups exactly
 * as given: a review adds no `system:authenticated`). `status.denied` is never set: no rule denies explicitly.
 */
import { ApiError, invalid, type StatusCause } from '../api-error.js';
import type { KubeObject } from '../kube-object.js';
import type { Attributes, Authorizer } from './authorizer.js';
import { isRecord } from '../../lib/record.js';

const GROUP = 'authorization.k8s.io';
const badBody = (why: string): ApiError =>
  new ApiError('BadRequest', `SubjectAccessReview in version "v1" cannot be handled as a SubjectAccessReview: ${why}`);

function strings(o: Record<string, unknown>, keys: readonly string[], where: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k of keys) {
    const v = o[k] ?? '';
    if (typeof v !== 'string') throw badBody(`${where}.${k} is not a string`);
    out[k] = v;
  }
  return out;
}

/** The SubjectAccessReview `body` with its `status` filled in. Throws 400 for a malformed body, 422 for an invalid one. */
export function reviewSubjectAccess(body: KubeObject, authorizer: Authorizer): KubeObject {
  const spec = body['spec'] ?? {};
  if (!isRecord(spec)) throw badBody('spec is not an object');
  const { user, uid } = strings(spec, ['user', 'uid'], 'spec') as { user: string; uid: string };
  const groups = spec['groups'] ?? [];
  if (!Array.isArray(groups) || !groups.every((g) => typeof g === 'string'))
    throw badBody('spec.groups is not a list of strings');
  const extraIn = spec['extra'] ?? {};
  if (
    !isRecord(extraIn) ||
    !Object.values(extraIn).every((v) => Array.isArray(v) && v.every((s) => typeof s === 'string'))
  )
    throw badBody('spec.extra is not a map of string lists');
  const extra = extraIn as Record<string, string[]>;
  const ra = spec['resourceAttributes'] ?? undefined;
  const nra = spec['nonResourceAttributes'] ?? undefined;
  if (ra !== undefined && !isRecord(ra)) throw badBody('spec.resourceAttributes is not an object');
  if (nra !== undefined && !isRecord(nra)) throw badBody('spec.nonResourceAttributes is not an object');

  const causes: StatusCause[] = [];
  const cause = (field: string, value: string, message: string): void => {
    causes.push({ reason: 'FieldValueInvalid', field, message: `Invalid value: ${value}: ${message}` });
  };
  if (ra !== undefined && nra !== undefined)
    cause(
      'spec.nonResourceAttributes',
      JSON.stringify(nra),
      'cannot be specified in combination with resourceAttributes',
    );
  if (ra === undefined && nra === undefined)
    cause(
      'spec.resourceAttributes',
      '"null"',
      'exactly one of nonResourceAttributes or resourceAttributes must be specified',
    );
  if (user === '' && groups.length === 0) cause('spec.user', '""', 'at least one of user or group must be specified');
  const meta = Object.fromEntries(
    // A client may send no metadata at all (a review is not stored).
    Object.entries((body.metadata as KubeObject['metadata'] | undefined) ?? {}).filter(
      ([k, v]) => v !== null && v !== undefined && k !== 'managedFields',
    ),
  );
  if (Object.keys(meta).length > 0) cause('metadata', JSON.stringify(meta), 'must be empty');
  if (causes.length > 0) throw invalid('SubjectAccessReview', GROUP, '', causes);

  const who = { username: user, ...(uid !== '' ? { uid } : {}), groups: groups, extra };
  let attrs: Attributes;
  if (ra !== undefined) {
    const r = strings(ra, ['namespace', 'verb', 'group', 'resource', 'subresource', 'name'], 'spec.resourceAttributes');
    attrs = {
      user: who,
      verb: r['verb']!,
      apiGroup: r['group']!,
      resource: r['resource']!,
      subresource: r['subresource']!,
      namespace: r['namespace']!,
      name: r['name']!,
    };
  } else {
    const r = strings(nra!, ['path', 'verb'], 'spec.nonResourceAttributes');
    attrs = { user: who, verb: r['verb']!, path: r['path']! };
  }
  const d = authorizer.authorize(attrs);
  return {
    ...body,
    apiVersion: `${GROUP}/v1`,
    kind: 'SubjectAccessReview',
    status: { allowed: d.allowed, ...(d.reason !== '' ? { reason: d.reason } : {}) },
  };
}
