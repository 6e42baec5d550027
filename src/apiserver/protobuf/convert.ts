/**
 * The conversion boundary for Kubernetes protobuf request bodies (`application/vnd.kubernetes.protobuf`), which
 * kubectl's typed generators (`create namespace`, `create deployment`, `run`, `create token`, ...) send. The body
 * is the 4-byte magic `k8s\0` and a runtime.Unknown envelope (k8s.io/apimachinery pkg/runtime/serializer/protobuf
 * protobuf.go); its raw bytes are the object's own message. The object becomes the JSON the same Go object would
 * have marshalled to (the form every other request body has), so the resource store sees one form only.
 *
 * The walk is written by hand over @bufbuild/protobuf's reflection because Kubernetes' JSON is Go's JSON, not
 * proto3 JSON: field presence follows Go pointers and `omitempty` (see go-json-forms.ts), embedded structs are
 * inlined, metav1.Time is RFC 3339 at second precision (null when zero), IntOrString and Quantity are bare
 * values, and bytes are base64.
 *
 * The real API server decodes every field of its types. amesh models the commonly used ones (proto/k8s/); a body
 * carrying a field it does not model is refused (415 naming the field), never stored with the field dropped.
 */
import { fromBinary, ScalarType, type DescField, type DescMessage, type MessageShape } from '@bufbuild/protobuf';
import { reflect, type ReflectMessage } from '@bufbuild/protobuf/reflect';
import { DeploymentSchema } from '../../api/k8s/io/api/apps/v1/generated_pb.js';
import { SelfSubjectReviewSchema, TokenRequestSchema } from '../../api/k8s/io/api/authentication/v1/generated_pb.js';
import { SelfSubjectAccessReviewSchema } from '../../api/k8s/io/api/authorization/v1/generated_pb.js';
import { CronJobSchema, JobSchema } from '../../api/k8s/io/api/batch/v1/generated_pb.js';
import {
  ConfigMapSchema,
  NamespaceSchema,
  PodSchema,
  SecretSchema,
  ServiceAccountSchema,
  ServiceSchema,
} from '../../api/k8s/io/api/core/v1/generated_pb.js';
import { PodDisruptionBudgetSchema } from '../../api/k8s/io/api/policy/v1/generated_pb.js';
import {
  ClusterRoleBindingSchema,
  ClusterRoleSchema,
  RoleBindingSchema,
  RoleSchema,
} from '../../api/k8s/io/api/rbac/v1/generated_pb.js';
import { TypeMetaSchema, UnknownSchema } from '../../api/k8s/io/apimachinery/pkg/runtime/generated_pb.js';
import { ApiError } from '../api-error.js';
import { kindOfObject } from '../kinds.js';
import type { KubeObject } from '../kube-object.js';
import { goJsonForm, goJsonName } from './go-json-forms.js';
import { kubeTime } from '../../lib/kube-time.js';

/** The media type of Kubernetes protobuf bodies. */
export const PROTOBUF_MEDIA_TYPE = 'application/vnd.kubernetes.protobuf';

/** Every protobuf body starts with these 4 bytes (k8s.io/apimachinery protobuf.go `protoEncodingPrefix`). */
const MAGIC = Buffer.from([0x6b, 0x38, 0x73, 0x00]);

/** The kinds whose protobuf bodies amesh decodes, by `apiVersion/kind`. */
const MESSAGES: ReadonlyMap<string, DescMessage> = new Map<string, DescMessage>([
  ['v1/Namespace', NamespaceSchema],
  ['v1/ConfigMap', ConfigMapSchema],
  ['v1/Secret', SecretSchema],
  ['v1/ServiceAccount', ServiceAccountSchema],
  ['v1/Service', ServiceSchema],
  ['v1/Pod', PodSchema],
  ['apps/v1/Deployment', DeploymentSchema],
  ['batch/v1/Job', JobSchema],
  ['batch/v1/CronJob', CronJobSchema],
  ['authentication.k8s.io/v1/TokenRequest', TokenRequestSchema],
  ['authentication.k8s.io/v1/SelfSubjectReview', SelfSubjectReviewSchema],
  ['authorization.k8s.io/v1/SelfSubjectAccessReview', SelfSubjectAccessReviewSchema],
  ['policy/v1/PodDisruptionBudget', PodDisruptionBudgetSchema],
  ['rbac.authorization.k8s.io/v1/ClusterRole', ClusterRoleSchema],
  ['rbac.authorization.k8s.io/v1/ClusterRoleBinding', ClusterRoleBindingSchema],
  ['rbac.authorization.k8s.io/v1/Role', RoleSchema],
  ['rbac.authorization.k8s.io/v1/RoleBinding', RoleBindingSchema],
]);

const TIME = 'k8s.io.apimachinery.pkg.apis.meta.v1.Time';
const INT_OR_STRING = 'k8s.io.apimachinery.pkg.util.intstr.IntOrString';
const QUANTITY = 'k8s.io.apimachinery.pkg.api.resource.Quantity';
/** IntOrString.type of a string value (k8s.io/apimachinery intstr.go `String`). */
const INT_OR_STRING_STRING = 1n;

/** Decodes a protobuf request body into the JSON form of its object; 400 or 415 with a clear message otherwise. */
export function decodeProtobufBody(body: Buffer): KubeObject {
  if (body.length < MAGIC.length || !body.subarray(0, MAGIC.length).equals(MAGIC)) {
    throw new ApiError(
      'BadRequest',
      `the body of the request could not be decoded as ${PROTOBUF_MEDIA_TYPE}: it does not start with the prefix "k8s\\x00"`,
    );
  }
  const envelope = parse(UnknownSchema, body.subarray(MAGIC.length), 'the runtime.Unknown envelope');
  refuseUnknownFields(reflect(UnknownSchema, envelope), '');
  const { typeMeta, raw, contentEncoding, contentType } = envelope;
  if (typeMeta !== undefined) refuseUnknownFields(reflect(TypeMetaSchema, typeMeta), '');
  if (contentEncoding !== '' || (contentType !== '' && contentType !== PROTOBUF_MEDIA_TYPE)) {
    throw new ApiError(
      'UnsupportedMediaType',
      `the protobuf envelope carries contentEncoding "${contentEncoding}" and contentType "${contentType}"; only unencoded ${PROTOBUF_MEDIA_TYPE} objects are accepted`,
    );
  }
  const apiVersion = typeMeta?.apiVersion ?? '';
  const kind = typeMeta?.kind ?? '';
  if (kind === '')
    throw new ApiError(
      'BadRequest',
      `the body of the request could not be decoded as ${PROTOBUF_MEDIA_TYPE}: its envelope names no kind`,
    );
  const schema = MESSAGES.get(`${apiVersion}/${kind}`);
  if (schema === undefined) {
    if (kindOfObject(apiVersion, kind) !== undefined) {
      throw new ApiError(
        'UnsupportedMediaType',
        `${kind} (${apiVersion}) objects are not accepted as ${PROTOBUF_MEDIA_TYPE} by this server; send the object as JSON (kubectl create -f or kubectl apply -f)`,
      );
    }
    throw new ApiError('BadRequest', `no kind "${kind}" is registered for version "${apiVersion}"`);
  }
  const object = toJson(reflect(schema, parse(schema, raw, `a ${kind}`)), '');
  return { apiVersion, kind, metadata: {}, ...object };
}

function parse<Desc extends DescMessage>(schema: Desc, bytes: Uint8Array, what: string): MessageShape<Desc> {
  try {
    return fromBinary(schema, bytes);
  } catch (e) {
    throw new ApiError(
      'BadRequest',
      `the body of the request could not be decoded as ${PROTOBUF_MEDIA_TYPE}: ${what}: ${(e as Error).message}`,
    );
  }
}

function refuseUnknownFields(m: ReflectMessage, path: string): void {
  const unknown = m.getUnknown();
  if (unknown === undefined || unknown.length === 0) return;
  const numbers = [...new Set(unknown.map((u) => u.no))].join(', ');
  throw new ApiError(
    'UnsupportedMediaType',
    `field ${numbers} of ${m.desc.typeName}${path === '' ? '' : ` (at ${path})`} is not supported in ${PROTOBUF_MEDIA_TYPE} bodies by this server; send the object as JSON (kubectl create -f or kubectl apply -f)`,
  );
}

function toJson(m: ReflectMessage, path: string): Record<string, unknown> {
  refuseUnknownFields(m, path);
  const out: Record<string, unknown> = {};
  const message = m.desc.typeName;
  for (const f of m.sortedFields) {
    const form = goJsonForm(message, f.name);
    const name = goJsonName(message, f.name);
    const at = path === '' ? name : `${path}.${name}`;
    switch (f.fieldKind) {
      case 'scalar': {
        const v = m.get(f);
        if (m.isSet(f) ? form === 'omitempty' && isZero(v) : form !== 'required') continue;
        out[name] = scalarJson(f.scalar, v);
        break;
      }
      case 'message': {
        if (!m.isSet(f)) continue;
        const v = messageJson(m.get(f), at);
        if (form === 'inline') Object.assign(out, v);
        else out[name] = v;
        break;
      }
      case 'list': {
        const list = m.get(f);
        if (list.size === 0) continue;
        out[name] = [...list].map((v, i) =>
          f.listKind === 'message'
            ? messageJson(v as ReflectMessage, `${at}[${i}]`)
            : scalarJson(f.scalar ?? ScalarType.INT64, v),
        );
        break;
      }
      case 'map': {
        const map = m.get(f);
        if (map.size === 0) continue;
        out[name] = Object.fromEntries(
          [...map].map(([k, v]) => [
            String(k),
            f.mapKind === 'message'
              ? messageJson(v as ReflectMessage, `${at}[${String(k)}]`)
              : scalarJson(f.scalar ?? ScalarType.STRING, v),
          ]),
        );
        break;
      }
      case 'enum':
        throw new Error(`${message}.${f.name}: enum fields are not modelled (Kubernetes' APIs use strings)`);
    }
  }
  return out;
}

/** Messages with a JSON form of their own (metav1.Time, IntOrString, Quantity), or a JSON object. */
function messageJson(m: ReflectMessage, path: string): unknown {
  switch (m.desc.typeName) {
    case TIME: {
      refuseUnknownFields(m, path);
      const seconds = Number(fieldValue(m, 'seconds'));
      const nanos = Number(fieldValue(m, 'nanos'));
      return seconds === 0 && nanos === 0 ? null : kubeTime(seconds * 1000);
    }
    case INT_OR_STRING:
      refuseUnknownFields(m, path);
      return fieldValue(m, 'type') === INT_OR_STRING_STRING ? fieldValue(m, 'strVal') : fieldValue(m, 'intVal');
    case QUANTITY:
      refuseUnknownFields(m, path);
      return fieldValue(m, 'string');
    default:
      return toJson(m, path);
  }
}

function fieldValue(m: ReflectMessage, name: string): unknown {
  const f = m.desc.fields.find((x) => x.name === name) as DescField & { fieldKind: 'scalar' };
  return m.get(f);
}

/** Go's metav1.Time JSON: RFC 3339 in UTC at second precision. */

function isZero(v: unknown): boolean {
  return v === '' || v === 0 || v === 0n || v === false || (v instanceof Uint8Array && v.length === 0);
}

function scalarJson(t: ScalarType, v: unknown): unknown {
  if (typeof v === 'bigint') return Number(v);
  if (t === ScalarType.BYTES) return Buffer.from(v as Uint8Array).toString('base64');
  return v;
}
