/**
 * Checks a merged IstioOperator against the field tables (values-schema.ts) as istioctl's decoders check it: the
 * first unknown field or mistyped value is refused, worded as istioctl words it (istio
 * operator/pkg/apis/validation/validation.go: `could not unmarshal: ...`), with the field's path added.
 */
import { MeshError } from '../lib/errors.js';
import { isRecord } from '../lib/record.js';
import { ISTIO_OPERATOR, type Field, type Leaf, type Message } from './values-schema.js';

const PREFIX = {
  protobuf: 'could not unmarshal: error unmarshaling JSON: while decoding JSON:',
  json: 'could not unmarshal: json:',
} as const;

function refuse(message: Message, problem: string, path: string): never {
  throw new MeshError(
    'INSTALL_ERR_VALUES',
    `${PREFIX[message.decoder]} ${problem}${path === '' ? '' : ` (at ${path})`}`,
  );
}

const LEAF_CHECKS: Readonly<Record<Leaf, { readonly ok: (v: unknown) => boolean; readonly want: string }>> = {
  string: { ok: (v) => typeof v === 'string', want: 'string' },
  bool: { ok: (v) => typeof v === 'boolean', want: 'bool' },
  uint: { ok: (v) => Number.isSafeInteger(v) && (v as number) >= 0, want: 'uint32' },
  int: { ok: (v) => Number.isSafeInteger(v), want: 'int' },
  number: { ok: (v) => typeof v === 'number', want: 'double' },
  struct: { ok: isRecord, want: 'map' },
  value: { ok: () => true, want: 'value' },
  strings: { ok: (v) => Array.isArray(v) && v.every((e) => typeof e === 'string'), want: 'list of strings' },
  structs: { ok: (v) => Array.isArray(v) && v.every(isRecord), want: 'list of maps' },
  stringMap: { ok: (v) => isRecord(v) && Object.values(v).every((e) => typeof e === 'string'), want: 'map of strings' },
  quantityMap: {
    ok: (v) => isRecord(v) && Object.values(v).every((e) => typeof e === 'string' || typeof e === 'number'),
    want: 'map of quantities',
  },
  intOrString: { ok: (v) => typeof v === 'string' || Number.isSafeInteger(v), want: 'int or string' },
  tag: { ok: (v) => typeof v === 'string' || typeof v === 'number', want: 'string or number' },
};

function checkField(owner: Message, name: string, field: Field, v: unknown, path: string): void {
  if (v === null) return;
  if (typeof field === 'string') {
    const check = LEAF_CHECKS[field];
    if (!check.ok(v)) refuse(owner, `invalid value for ${check.want} field ${name}: ${JSON.stringify(v)}`, path);
    return;
  }
  if ('enumOf' in field) {
    if (typeof v !== 'string' || !field.enumOf.includes(v))
      refuse(
        owner,
        `invalid value for enum field ${name}: ${JSON.stringify(v)} (one of ${field.enumOf.join(', ')})`,
        path,
      );
    return;
  }
  if ('listOf' in field) {
    if (!Array.isArray(v)) refuse(owner, `invalid value for list field ${name}: ${JSON.stringify(v)}`, path);
    v.forEach((e, i) => checkMessage(field.listOf, e, `${path}[${String(i)}]`));
    return;
  }
  checkMessage(field, v, path);
}

function checkMessage(message: Message, v: unknown, path: string): void {
  if (!isRecord(v)) refuse(message, `cannot decode ${JSON.stringify(v)} into ${message.message}`, path);
  for (const [k, value] of Object.entries(v)) {
    const at = path === '' ? k : `${path}.${k}`;
    const field = message.fields[k];
    if (field === undefined)
      refuse(
        message,
        message.decoder === 'protobuf' ? `unknown field "${k}" in ${message.message}` : `unknown field "${k}"`,
        at,
      );
    checkField(message, k, field, value, at);
  }
}

/** Throws INSTALL_ERR_VALUES naming the first field of `iop` that istioctl would refuse. */
export function validateIstioOperator(iop: unknown): void {
  checkMessage(ISTIO_OPERATOR, iop, '');
}
