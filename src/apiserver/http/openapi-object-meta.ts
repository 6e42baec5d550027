/**
 * The `io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta` component that custom kinds' OpenAPI schemas point their
 * `metadata` at, as kube-apiserver publishes CRD schemas (k8s.io/apiextensions-apiserver
 * `pkg/controller/openapi/builder`): the fields clients set and read, so `kubectl explain <kind>.metadata` works.
 */
export const OBJECT_META_REF = '#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta';
export const OBJECT_META_NAME = 'io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta';

const stringMap = (description: string): object => ({
  type: 'object',
  description,
  additionalProperties: { type: 'string', default: '' },
});

export const OBJECT_META_SCHEMA = {
  type: 'object',
  description: 'Metadata every persisted object has: its name, namespace, labels and the system fields.',
  properties: {
    annotations: stringMap('Unstructured key value data kept with the object, not used to select it.'),
    creationTimestamp: { type: 'string', format: 'date-time', description: 'When the server created the object.' },
    deletionGracePeriodSeconds: { type: 'integer', format: 'int64', description: 'Seconds left to terminate.' },
    deletionTimestamp: { type: 'string', format: 'date-time', description: 'When the object will be deleted.' },
    finalizers: {
      type: 'array',
      description: 'Must be empty before the object is deleted from the registry.',
      items: { type: 'string', default: '' },
      'x-kubernetes-list-type': 'set',
    },
    generateName: { type: 'string', description: 'Prefix the server uses to generate a name when none is given.' },
    generation: { type: 'integer', format: 'int64', description: 'Sequence number of the desired state.' },
    labels: stringMap('Key value pairs used to organize and select objects.'),
    name: { type: 'string', description: 'Unique within a namespace.' },
    namespace: { type: 'string', description: 'The namespace the object is in; empty for cluster-scoped objects.' },
    ownerReferences: {
      type: 'array',
      description: 'Objects this object depends on.',
      items: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['uid'],
    },
    resourceVersion: { type: 'string', description: 'Opaque version of the object, for concurrency control.' },
    uid: { type: 'string', description: 'Unique in time and space, set by the server.' },
  },
} as const;
