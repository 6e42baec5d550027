import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseManifests, type ResourceOf } from '../registry/manifest-dir.js';
import { EndpointSliceIndex } from './endpoint-slice-index.js';

function slice(service: string, pods: readonly string[]): ResourceOf<'EndpointSlice'> {
  const endpoints = pods.map(
    (p, i) => `{addresses: [10.0.0.${String(i + 1)}], targetRef: {kind: Pod, namespace: ns, name: ${p}, uid: u-${p}}}`,
  );
  const { objects, errors } = parseManifests(
    'm.yaml',
    `apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {name: s-1, namespace: ns, labels: {kubernetes.io/service-name: ${service}}}\naddressType: IPv4\nendpoints: [${endpoints.join(', ')}]\n`,
  );
  assert.deepEqual(errors, []);
  return objects[0] as ResourceOf<'EndpointSlice'>;
}

test('a slice edit touches only the pods it adds or drops; a Service rename or a delete touches every pod listed', () => {
  const index = new EndpointSliceIndex();
  const key = 'EndpointSlice/ns/s-1';
  assert.deepEqual([...index.set(key, slice('db', ['a', 'b']))].sort(), ['ns/a', 'ns/b']);
  assert.deepEqual([...index.set(key, slice('db', ['a', 'b']))], [], 'a status-only edit (the same pods)');
  assert.deepEqual([...index.set(key, slice('db', ['b', 'c']))].sort(), ['ns/a', 'ns/c']);
  assert.deepEqual(index.servicesOf({ namespace: 'ns', name: 'c', uid: 'u-c' }), ['ns/db']);
  assert.deepEqual(index.servicesOf({ namespace: 'ns', name: 'c', uid: 'another' }), [], 'matched on uid too');
  assert.deepEqual([...index.set(key, slice('cache', ['b', 'c']))].sort(), ['ns/b', 'ns/c']);
  assert.deepEqual(index.servicesOf({ namespace: 'ns', name: 'b', uid: 'u-b' }), ['ns/cache']);
  assert.deepEqual([...index.set(key, undefined)].sort(), ['ns/b', 'ns/c']);
  assert.deepEqual(index.servicesOf({ namespace: 'ns', name: 'b', uid: 'u-b' }), []);
});
