/**
 * The one IstioOperator an install is made from, merged as istioctl merges it (istio
 * operator/pkg/render/manifest.go MergeInputs): the profile (spec.profile, else `default`) is the base, the `-f`
 * files are laid over it in order and the `--set` flags after them (later wins); then the spec's shorthands become
 * chart values (spec.hub → values.global.hub, spec.tag → values.global.tag, spec.revision → values.revision,
 * spec.meshConfig → values.meshConfig), each component's enablement is told to the charts that depend on it
 * (values.pilot.enabled, values.pilot.cni.enabled), values.global.istioNamespace becomes metadata.namespace, and the
 * user's own spec.values are laid over all that once more. The inputs laid over the profile are checked field by
 * field first (validate-istio-operator.ts), so that an error names the field where the user wrote it;
 * spec.unvalidatedValues are laid over the values unchecked. The result is frozen. Files are read as
 * istioctl reads them, YAML 1.1 (`on` and `yes` are booleans).
 */
import { parseAllDocuments } from 'yaml';
import { MeshError } from '../lib/errors.js';
import { isRecord } from '../lib/record.js';
import { istioOperatorProfile } from './profiles.js';
import { applySetFlags, type SetFlag } from './set-flag.js';
import { validateIstioOperator } from './validate-istio-operator.js';
import { getPath, getString, getTree, mergeInto, setPath, type Tree } from './value-tree.js';

/** An `-f` file's name and text (`-` is stdin, read by the caller). */
export interface InputFile {
  readonly name: string;
  readonly text: string;
}

/** Parses one `-f` file: a single IstioOperator document (INSTALL_ERR_FILE otherwise). */
export function parseIstioOperatorFile(f: InputFile): Tree {
  const docs = parseAllDocuments(f.text, { version: '1.1' });
  if (!Array.isArray(docs)) return {};
  const values: unknown[] = [];
  for (const d of docs) {
    if (d.errors.length > 0)
      throw new MeshError('INSTALL_ERR_FILE', `${f.name}: unable to parse file: ${d.errors[0]!.message}`);
    const v: unknown = d.toJS();
    if (v !== null && v !== undefined) values.push(v);
  }
  if (values.length > 1)
    throw new MeshError(
      'INSTALL_ERR_FILE',
      `${f.name}: contains multiple IstioOperator CRs, only one per file is supported`,
    );
  const doc = values[0] ?? {};
  if (!isRecord(doc)) throw new MeshError('INSTALL_ERR_FILE', `${f.name}: is not an IstioOperator (a YAML map)`);
  if (doc['kind'] !== undefined && doc['kind'] !== 'IstioOperator')
    throw new MeshError(
      'INSTALL_ERR_FILE',
      `${f.name}: is a ${JSON.stringify(doc['kind'])}, not an IstioOperator (apiVersion install.istio.io/v1alpha1)`,
    );
  if (doc['spec'] === null) delete doc['spec'];
  return doc;
}

/** spec fields istioctl moves into the charts' values before rendering. */
const TRANSLATIONS: readonly (readonly [string, readonly string[]])[] = [
  ['hub', ['global', 'hub']],
  ['tag', ['global', 'tag']],
  ['revision', ['revision']],
  ['compatibilityVersion', ['compatibilityVersion']],
];

function translateToHelm(iop: Tree): void {
  const spec = getTree(iop, ['spec']) ?? {};
  const values = (spec['values'] ??= {}) as Tree;
  for (const [from, to] of TRANSLATIONS) {
    const v = spec[from];
    if (v !== undefined && v !== null && v !== '') setPath(values, to, v);
  }
  const mesh = getTree(spec, ['meshConfig']);
  if (mesh !== undefined) mergeInto(values, { meshConfig: mesh });
  const enabled = (component: string): boolean => getPath(spec, ['components', component, 'enabled']) === true;
  setPath(values, ['pilot', 'enabled'], enabled('pilot'));
  setPath(values, ['pilot', 'cni', 'enabled'], enabled('cni'));
  const ns = getString(values, ['global', 'istioNamespace']);
  if (ns !== '') setPath(iop, ['metadata', 'namespace'], ns);
}

/** The IstioOperator the files and flags make (see the file comment), checked, frozen deep. */
export function mergeIstioOperator(files: readonly InputFile[], sets: readonly SetFlag[]): Readonly<Tree> {
  const user: Tree = { apiVersion: 'install.istio.io/v1alpha1', kind: 'IstioOperator', metadata: {}, spec: {} };
  for (const f of files) mergeInto(user, parseIstioOperatorFile(f));
  applySetFlags(user, sets);
  const profile = getPath(user, ['spec', 'profile']);
  if (profile !== undefined && typeof profile !== 'string')
    throw new MeshError('INSTALL_ERR_VALUES', `spec.profile must be a profile name, not ${JSON.stringify(profile)}`);
  const iop = mergeInto(istioOperatorProfile(profile ?? ''), user);
  validateIstioOperator(iop);
  translateToHelm(iop);
  const userValues = getTree(user, ['spec', 'values']);
  if (userValues !== undefined) mergeInto(iop, { spec: { values: userValues } });
  const unvalidated = getTree(iop, ['spec', 'unvalidatedValues']);
  if (unvalidated !== undefined) mergeInto(iop, { spec: { values: unvalidated } });
  return deepFreeze(iop);
}

function deepFreeze<T>(v: T): T {
  if (typeof v === 'object' && v !== null) {
    for (const child of Object.values(v)) deepFreeze(child);
    Object.freeze(v);
  }
  return v;
}
