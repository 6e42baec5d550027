import { test } from 'node:test';
import assert from 'node:assert/strict';
import { grantShape } from '../model/reference-grants.js';
import { resolvedRefs } from './resolved-refs.js';

/** Services `app/echo` and `db/postgres` exist. */
const exists = (namespace: string, name: string): boolean =>
  (namespace === 'app' && name === 'echo') || (namespace === 'db' && name === 'postgres');
/** A ReferenceGrant in `db` that lets TCPRoutes of `app` refer to its Services. */
const tcpGrant = grantShape('db', {
  from: [{ group: 'gateway.networking.k8s.io', kind: 'TCPRoute', namespace: 'app' }],
  to: [{ group: '', kind: 'Service' }],
});
const reason = (c: { status: string; reason: string; message: string }): string[] => [c.status, c.reason, c.message];

test('a TLSRoute or TCPRoute whose backends are Services that exist resolves its references', () => {
  for (const kind of ['TLSRoute', 'TCPRoute'])
    assert.deepEqual(reason(resolvedRefs({ kind, namespace: 'app', backendRefs: [{ name: 'echo' }] }, [], exists)), [
      'True',
      'ResolvedRefs',
      'All references resolved',
    ]);
});

test('a backendRef to a Service that does not exist is BackendNotFound', () => {
  const c = resolvedRefs(
    { kind: 'TLSRoute', namespace: 'app', backendRefs: [{ name: 'echo' }, { name: 'gone' }] },
    [],
    exists,
  );
  assert.deepEqual(reason(c), ['False', 'BackendNotFound', 'backend(gone.app.svc) not found']);
});

test("a Service of another namespace needs a ReferenceGrant there for the route's own kind, else RefNotPermitted naming that kind", () => {
  const ref = { name: 'postgres', namespace: 'db' };
  const tcp = { kind: 'TCPRoute', namespace: 'app', backendRefs: [ref] };
  assert.deepEqual(reason(resolvedRefs(tcp, [], exists)), [
    'False',
    'RefNotPermitted',
    'backendRef postgres/db not accessible to a TCPRoute in namespace "app" (missing a ReferenceGrant?)',
  ]);
  assert.equal(resolvedRefs(tcp, [tcpGrant], exists).status, 'True');
  const tls = resolvedRefs({ ...tcp, kind: 'TLSRoute' }, [tcpGrant], exists);
  assert.deepEqual(
    [tls.reason, tls.message],
    [
      'RefNotPermitted',
      'backendRef postgres/db not accessible to a TLSRoute in namespace "app" (missing a ReferenceGrant?)',
    ],
    "a grant for TCPRoutes does not open the namespace to the same namespace's TLSRoutes",
  );
});

test('a backendRef of a kind other than Service is InvalidKind, as Istio words it', () => {
  const c = resolvedRefs(
    { kind: 'HTTPRoute', namespace: 'app', backendRefs: [{ group: 'storage.example', kind: 'Bucket', name: 'b' }] },
    [],
    exists,
  );
  assert.deepEqual(reason(c), [
    'False',
    'InvalidKind',
    'referencing unsupported backendRef: group "storage.example" kind "Bucket"',
  ]);
});
