/**
 * Field selectors as the API server parses, checks and matches them: the `fieldSelector` syntax after
 * k8s.io/apimachinery pkg/fields/selector.go (`=`, `==`, `!=`, comma = AND, `\` escapes `\`, `,` and `=` in
 * values), the fields each kind allows after the field label conversion functions the list handler runs
 * (k8s.io/apiserver pkg/endpoints/handlers/get.go; pkg/apis/core/v1/conversion.go, pkg/apis/batch/v1/conversion.go,
 * runtime.DefaultMetaV1FieldSelectorConversion for other built-in kinds, apiextensions-apiserver's crConverter
 * for custom resources), and the values each kind exposes (pkg/registry/<group>/<kind>/strategy.go
 * ToSelectableFields). Errors are `400 BadRequest` worded as upstream.
 */
import { ApiError } from './api-error.js';
import { goQuote } from './go-format.js';
import type { KindInfo } from './kind-info.js';
import type { KubeObject } from './kube-object.js';
import { supportsStrategicMergePatch } from './strategic-merge-patch.js';
import { asRecord } from '../lib/record.js';

interface Term {
  readonly field: string;
  readonly value: string;
  readonly negate: boolean;
}

/** A parsed selector: every term must hold (AND). */
export interface FieldSelector {
  /** True when the selector does not restrict anything. */
  readonly empty: boolean;
  matches(obj: KubeObject): boolean;
  /** The value the selector requires `field` to equal (`field=v`), if any: `metadata.name` selects one object. */
  requiresExactMatch(field: string): string | undefined;
}

type Fields = Record<string, string>;

/** How one kind converts field labels: the labels it accepts, renamed labels, its error, and its field values. */
interface FieldLabels {
  readonly labels: readonly string[];
  readonly renames?: Readonly<Record<string, string>>;
  readonly unsupported: (label: string) => string;
  readonly values?: (obj: KubeObject) => Fields;
}

const str = (v: unknown): string => (typeof v === 'string' ? v : '');

const notSupported = (label: string): string => `field label not supported: ${label}`;

const POD_LABELS: FieldLabels = {
  labels: [
    'metadata.name',
    'metadata.namespace',
    'spec.nodeName',
    'spec.restartPolicy',
    'spec.schedulerName',
    'spec.serviceAccountName',
    'spec.hostNetwork',
    'status.phase',
    'status.podIP',
    'status.podIPs',
    'status.nominatedNodeName',
  ],
  // Old v1 clients send spec.host.
  renames: { 'spec.host': 'spec.nodeName' },
  unsupported: notSupported,
  values: (pod) => {
    const spec = asRecord(pod.spec);
    const status = asRecord(pod.status);
    const podIPs = Array.isArray(status.podIPs) ? status.podIPs : [];
    return {
      'spec.nodeName': str(spec.nodeName),
      'spec.restartPolicy': str(spec.restartPolicy),
      'spec.schedulerName': str(spec.schedulerName),
      'spec.serviceAccountName': str(spec.serviceAccountName),
      'spec.hostNetwork': String(spec.hostNetwork === true),
      'status.phase': str(status.phase),
      'status.podIP': podIPs.length > 0 ? str(asRecord(podIPs[0]).ip) : str(status.podIP),
      'status.nominatedNodeName': str(status.nominatedNodeName),
    };
  },
};

const EVENT_LABELS: FieldLabels = {
  labels: [
    'involvedObject.kind',
    'involvedObject.namespace',
    'involvedObject.name',
    'involvedObject.uid',
    'involvedObject.apiVersion',
    'involvedObject.resourceVersion',
    'involvedObject.fieldPath',
    'reason',
    'reportingComponent',
    'source',
    'type',
    'metadata.namespace',
    'metadata.name',
  ],
  unsupported: notSupported,
  values: (ev) => {
    const involved = asRecord(ev.involvedObject);
    const fields: Fields = {
      reason: str(ev.reason),
      reportingComponent: str(ev.reportingComponent),
      source: str(asRecord(ev.source).component) || str(ev.reportingComponent),
      type: str(ev.type),
    };
    for (const f of ['kind', 'namespace', 'name', 'uid', 'apiVersion', 'resourceVersion', 'fieldPath'])
      fields[`involvedObject.${f}`] = str(involved[f]);
    return fields;
  },
};

/** The kinds with their own field label conversion, by `group/Kind`. */
const KIND_FIELD_LABELS: ReadonlyMap<string, FieldLabels> = new Map<string, FieldLabels>([
  ['/Pod', POD_LABELS],
  ['/Event', EVENT_LABELS],
  [
    '/Node',
    {
      labels: ['metadata.name', 'spec.unschedulable'],
      unsupported: notSupported,
      values: (n) => ({ 'spec.unschedulable': String(asRecord(n.spec).unschedulable === true) }),
    },
  ],
  [
    '/Namespace',
    {
      labels: ['status.phase', 'metadata.name'],
      unsupported: notSupported,
      values: (ns) => ({ 'status.phase': str(asRecord(ns.status).phase) }),
    },
  ],
  [
    '/Secret',
    {
      labels: ['type', 'metadata.namespace', 'metadata.name'],
      unsupported: notSupported,
      values: (s) => ({ type: str(s.type) }),
    },
  ],
  [
    '/Service',
    {
      labels: ['metadata.namespace', 'metadata.name', 'spec.clusterIP', 'spec.type'],
      unsupported: notSupported,
      values: (svc) => ({
        'spec.clusterIP': str(asRecord(svc.spec).clusterIP),
        'spec.type': str(asRecord(svc.spec).type),
      }),
    },
  ],
  [
    'batch/Job',
    {
      labels: ['metadata.name', 'metadata.namespace', 'status.successful'],
      unsupported: (label) => `field label ${goQuote(label)} not supported for Job`,
      values: (job) => {
        const succeeded = asRecord(job.status).succeeded;
        return { 'status.successful': String(typeof succeeded === 'number' ? succeeded : 0) };
      },
    },
  ],
]);

/** Other built-in kinds: runtime.DefaultMetaV1FieldSelectorConversion. */
const DEFAULT_BUILT_IN: FieldLabels = {
  labels: ['metadata.name', 'metadata.namespace'],
  unsupported: (label) => `${goQuote(label)} is not a known field selector: only "metadata.name", "metadata.namespace"`,
};

function fieldLabelsOf(kind: KindInfo): FieldLabels {
  const own = KIND_FIELD_LABELS.get(`${kind.group}/${kind.kind}`);
  if (own !== undefined) return own;
  if (supportsStrategicMergePatch(kind)) return DEFAULT_BUILT_IN;
  // Custom resources: crConverter accepts metadata.namespace only for namespaced kinds.
  return {
    labels: kind.namespaced ? ['metadata.name', 'metadata.namespace'] : ['metadata.name'],
    unsupported: notSupported,
  };
}

/** The field values an object of `kind` is matched on (ObjectMetaFieldsSet plus the kind's own fields). */
function selectableFields(obj: KubeObject, kind: KindInfo, labels: FieldLabels): Fields {
  const meta: Fields = { 'metadata.name': str(obj.metadata.name) };
  if (kind.namespaced) meta['metadata.namespace'] = str(obj.metadata.namespace);
  return { ...labels.values?.(obj), ...meta };
}

// --- parsing (pkg/fields/selector.go) ---------------------------------------------------------------------------

/** The comma-separated terms; a backslash-escaped comma stays in its term, escape included. */
function splitTerms(s: string): string[] {
  if (s === '') return [];
  const terms: string[] = [];
  let start = 0;
  let inSlash = false;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (inSlash) inSlash = false;
    else if (c === '\\') inSlash = true;
    else if (c === ',') {
      terms.push(s.slice(start, i));
      start = i + 1;
    }
  }
  terms.push(s.slice(start));
  return terms;
}

/** `!=` is tried before `==` before `=`, at each position from the left; the field itself has no escaping. */
const TERM_OPERATORS = ['!=', '==', '='] as const;

function splitTerm(term: string): [string, (typeof TERM_OPERATORS)[number], string] | undefined {
  for (let i = 0; i < term.length; i++) {
    for (const op of TERM_OPERATORS) {
      if (term.startsWith(op, i)) return [term.slice(0, i), op, term.slice(i + op.length)];
    }
  }
  return undefined;
}

/** UnescapeValue: `\\`, `\,` and `\=` are the only escapes; a bare `,` or `=` is refused. */
function unescapeValue(s: string): string {
  if (!/[\\,=]/.test(s)) return s;
  let out = '';
  let inSlash = false;
  for (const c of s) {
    if (inSlash) {
      if (c !== '\\' && c !== ',' && c !== '=')
        throw new ApiError('BadRequest', `invalid field selector: invalid escape sequence: \\${c}`);
      out += c;
      inSlash = false;
    } else if (c === '\\') {
      inSlash = true;
    } else if (c === ',' || c === '=') {
      // Go prints the rune with %v: its code point.
      throw new ApiError('BadRequest', `invalid field selector: unescaped character in value: ${c.codePointAt(0)!}`);
    } else {
      out += c;
    }
  }
  if (inSlash) throw new ApiError('BadRequest', 'invalid field selector: invalid escape sequence: \\');
  return out;
}

function parseTerms(selector: string): Term[] {
  const terms: Term[] = [];
  for (const part of splitTerms(selector).sort()) {
    if (part === '') continue;
    const split = splitTerm(part);
    if (split === undefined)
      throw new ApiError('BadRequest', `invalid selector: '${selector}'; can't understand '${part}'`);
    const [field, op, rhs] = split;
    terms.push({ field, value: unescapeValue(rhs), negate: op === '!=' });
  }
  return terms;
}

/**
 * Parses the `fieldSelector` query parameter for `kind`: the syntax first, then each field label (in sorted
 * term order) through the kind's conversion. Malformed or unsupported is `400 BadRequest`.
 */
export function parseFieldSelector(selector: string, kind: KindInfo): FieldSelector {
  const labels = fieldLabelsOf(kind);
  const terms = parseTerms(selector).map((t): Term => {
    const field =
      labels.renames !== undefined && Object.hasOwn(labels.renames, t.field) ? labels.renames[t.field]! : t.field;
    if (!labels.labels.includes(field)) throw new ApiError('BadRequest', labels.unsupported(t.field));
    return { ...t, field };
  });
  return Object.freeze({
    empty: terms.length === 0,
    matches(obj: KubeObject): boolean {
      if (terms.length === 0) return true;
      const fields = selectableFields(obj, kind, labels);
      return terms.every((t) => ((fields[t.field] ?? '') === t.value) !== t.negate);
    },
    requiresExactMatch(field: string): string | undefined {
      return terms.find((t) => t.field === field && !t.negate)?.value;
    },
  });
}
