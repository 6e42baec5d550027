import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  create,
  toBinary,
  type DescMessage,
  type MessageInitShape,
  type MessageShape,
  type UnknownField,
} from '@bufbuild/protobuf';
import { WireType } from '@bufbuild/protobuf/wire';
import { DeploymentSchema } from '../../api/k8s/io/api/apps/v1/generated_pb.js';
import { TokenRequestSchema } from '../../api/k8s/io/api/authentication/v1/generated_pb.js';
import { NamespaceSchema, PodSchema, SecretSchema } from '../../api/k8s/io/api/core/v1/generated_pb.js';
import { UnknownSchema } from '../../api/k8s/io/apimachinery/pkg/runtime/generated_pb.js';
import { ApiError } from '../api-error.js';
import { decodeProtobufBody } from './convert.js';

/** A body as client-go frames it: the magic, then runtime.Unknown around the object's own encoding. */
function frame<Desc extends DescMessage>(
  apiVersion: string,
  kind: string,
  schema: Desc,
  init: MessageInitShape<Desc> | MessageShape<Desc>,
  envelope: { contentEncoding?: string } = {},
): Buffer {
  const raw = toBinary(schema, create(schema, init));
  return Buffer.concat([
    Buffer.from('k8s\0', 'latin1'),
    toBinary(UnknownSchema, create(UnknownSchema, { typeMeta: { apiVersion, kind }, raw, ...envelope })),
  ]);
}

/** ObjectMeta as Go's marshaller writes it: every non-pointer field present, zero or not. */
const goMeta = (name: string) => ({
  name,
  generateName: '',
  namespace: '',
  selfLink: '',
  uid: '',
  resourceVersion: '',
  generation: 0n,
  creationTimestamp: {},
});

function rejects(body: Buffer, reason: string, message: RegExp): void {
  assert.throws(
    () => decodeProtobufBody(body),
    (e: unknown) => e instanceof ApiError && e.reason === reason && message.test(e.message),
  );
}

describe('Kubernetes protobuf request bodies decode to the JSON Go would have marshalled', () => {
  test('Namespace from kubectl create namespace: zero strings are omitted, a zero Time is null, empty structs stay', () => {
    const o = decodeProtobufBody(
      frame('v1', 'Namespace', NamespaceSchema, { metadata: goMeta('x'), spec: {}, status: { phase: '' } }),
    );
    assert.deepEqual(o, {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: 'x', creationTimestamp: null },
      spec: {},
      status: {},
    });
  });

  test('Secret data bytes become base64, and a pointer bool that is false still shows', () => {
    const o = decodeProtobufBody(
      frame('v1', 'Secret', SecretSchema, {
        metadata: { ...goMeta('s'), labels: { a: 'b' } },
        data: { p: Buffer.from('s3cr\xffet', 'latin1') },
        stringData: { q: 'v' },
        type: 'Opaque',
        immutable: false,
      }),
    );
    assert.deepEqual(o.data, { p: Buffer.from('s3cr\xffet', 'latin1').toString('base64') });
    assert.deepEqual(o.stringData, { q: 'v' });
    assert.equal(o.type, 'Opaque');
    assert.equal(o.immutable, false);
    assert.deepEqual(o.metadata.labels, { a: 'b' });
  });

  test('Deployment: pointer zero replicas shows, omitempty zero hides, IntOrString, Quantity, Time and inlined structs take their JSON forms', () => {
    const container = {
      name: '',
      image: 'nginx',
      resources: { limits: { cpu: { string: '500m' } }, requests: {} },
      readinessProbe: { handler: { httpGet: { path: '/', port: { type: 1n, strVal: 'http' } } }, periodSeconds: 0 },
      env: [{ name: 'K', valueFrom: { configMapKeyRef: { localObjectReference: { name: 'cm' }, key: 'k' } } }],
    };
    const o = decodeProtobufBody(
      frame('apps/v1', 'Deployment', DeploymentSchema, {
        metadata: { ...goMeta('web'), creationTimestamp: { seconds: 1700000000n } },
        spec: {
          replicas: 0,
          minReadySeconds: 0,
          strategy: {
            type: 'RollingUpdate',
            rollingUpdate: { maxSurge: { type: 1n, strVal: '25%' }, maxUnavailable: { type: 0n, intVal: 1 } },
          },
          template: { metadata: goMeta(''), spec: { containers: [container] } },
        },
      }),
    );
    const spec = o.spec as Record<string, unknown>;
    assert.equal(o.metadata.creationTimestamp, '2023-11-14T22:13:20Z');
    assert.equal(spec.replicas, 0);
    assert.equal('minReadySeconds' in spec, false);
    assert.deepEqual(spec.strategy, { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1, maxSurge: '25%' } });
    const c = (spec.template as { spec: { containers: Record<string, unknown>[] } }).spec.containers[0]!;
    assert.equal(c.name, '', 'Container.name has no omitempty');
    assert.deepEqual(c.resources, { limits: { cpu: '500m' } });
    assert.deepEqual(c.readinessProbe, { httpGet: { path: '/', port: 'http' } });
    assert.deepEqual(c.env, [{ name: 'K', valueFrom: { configMapKeyRef: { name: 'cm', key: 'k' } } }]);
  });

  test('TokenRequest from kubectl create token: BoundObjectReference.uID is uid in JSON, expirationSeconds is a number', () => {
    const o = decodeProtobufBody(
      frame('authentication.k8s.io/v1', 'TokenRequest', TokenRequestSchema, {
        metadata: goMeta(''),
        spec: {
          audiences: ['istio-ca'],
          expirationSeconds: 3600n,
          boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'p', uID: 'u-1' },
        },
        status: { token: '', expirationTimestamp: {} },
      }),
    );
    assert.deepEqual(o.spec, {
      audiences: ['istio-ca'],
      boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'p', uid: 'u-1' },
      expirationSeconds: 3600,
    });
    assert.deepEqual(o.status, { token: '', expirationTimestamp: null });
  });
});

describe('bad protobuf bodies are refused with a clear 4xx', () => {
  const good = frame('v1', 'Namespace', NamespaceSchema, { metadata: goMeta('x') });

  test('a body without the k8s\\0 prefix is 400', () => {
    rejects(Buffer.from('{"kind":"Namespace"}'), 'BadRequest', /does not start with the prefix/);
    rejects(Buffer.alloc(0), 'BadRequest', /does not start with the prefix/);
  });

  test('a truncated body is 400', () => {
    rejects(
      good.subarray(0, good.length - 3),
      'BadRequest',
      /could not be decoded as application\/vnd\.kubernetes\.protobuf/,
    );
  });

  test('a kind no API serves is 400 as the scheme words it', () => {
    rejects(
      frame('v1', 'Frobnicator', NamespaceSchema, {}),
      'BadRequest',
      /no kind "Frobnicator" is registered for version "v1"/,
    );
    rejects(
      Buffer.concat([Buffer.from('k8s\0', 'latin1'), toBinary(UnknownSchema, create(UnknownSchema, {}))]),
      'BadRequest',
      /names no kind/,
    );
  });

  test('a served kind amesh does not decode from protobuf is 415 pointing at JSON', () => {
    rejects(
      frame('v1', 'Node', NamespaceSchema, { metadata: goMeta('n') }),
      'UnsupportedMediaType',
      /Node \(v1\) objects are not accepted as application\/vnd\.kubernetes\.protobuf.*kubectl apply -f/,
    );
  });

  test('a field amesh does not model is 415 naming its number, message and path, never dropped', () => {
    const emptyMessageField = (no: number): UnknownField => ({
      no,
      wireType: WireType.LengthDelimited,
      data: new Uint8Array([0]),
    });
    const pod = create(PodSchema, { metadata: goMeta('p'), spec: { containers: [{ name: 'c', image: 'i' }] } });
    pod.spec!.$unknown = [emptyMessageField(26)];
    rejects(
      frame('v1', 'Pod', PodSchema, pod),
      'UnsupportedMediaType',
      /field 26 of k8s\.io\.api\.core\.v1\.PodSpec \(at spec\) is not supported/,
    );
    pod.spec!.$unknown = [];
    pod.spec!.containers[0]!.$unknown = [emptyMessageField(23)];
    rejects(
      frame('v1', 'Pod', PodSchema, pod),
      'UnsupportedMediaType',
      /field 23 of k8s\.io\.api\.core\.v1\.Container \(at spec\.containers\[0\]\)/,
    );
  });

  test('an encoded envelope (contentEncoding) is 415', () => {
    rejects(
      frame('v1', 'Namespace', NamespaceSchema, {}, { contentEncoding: 'gzip' }),
      'UnsupportedMediaType',
      /contentEncoding "gzip"/,
    );
  });
});
