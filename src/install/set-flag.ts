/**
 * `--set path=value`, as istioctl reads it (istio operator/pkg/values/map.go SetPaths, getPV, parseValue): the path
 * is under the IstioOperator's `spec` (`profile=ambient` sets spec.profile, `values.global.hub=...` spec.values...),
 * and the value is typed as istioctl types it: a whole number, else a number, else a Go boolean (`true`, `False`,
 * `1`... the spellings strconv.ParseBool takes, numbers first), else a string in which `\,` stands for a comma. Tags,
 * the compatibility version and proxyMetadata entries stay strings (`tag=1.30` is not the number 1.3).
 */
import { MeshError } from '../lib/errors.js';
import { PathError, setPath, splitPath, type Tree } from './value-tree.js';

export interface SetFlag {
  /** The path under the IstioOperator, `spec.` included. */
  readonly path: readonly string[];
  readonly value: unknown;
  /** The flag as given, for messages. */
  readonly text: string;
}

/** Paths (under the IstioOperator) whose values istioctl never converts from a string. */
const ALWAYS_STRING = [
  'spec.values.compatibilityVersion',
  'spec.tag',
  'spec.values.global.tag',
  'spec.meshConfig.defaultConfig.proxyMetadata.',
  'spec.values.meshConfig.defaultConfig.proxyMetadata.',
  'spec.compatibilityVersion',
];

const GO_TRUE = new Set(['1', 't', 'T', 'TRUE', 'true', 'True']);
const GO_FALSE = new Set(['0', 'f', 'F', 'FALSE', 'false', 'False']);
/** strconv.Atoi's grammar (within 64 bits) and strconv.ParseFloat's decimal forms. */
const GO_INT = /^[+-]?\d+$/;
const GO_FLOAT = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$|^[+-]?(?:inf|infinity|nan)$/i;

/** A --set value typed as istioctl's parseValue types it. */
export function typedSetValue(text: string): unknown {
  if (GO_INT.test(text) && Number.isSafeInteger(Number(text))) return Number(text);
  if (GO_FLOAT.test(text)) return Number(text);
  if (GO_TRUE.has(text)) return true;
  if (GO_FALSE.has(text)) return false;
  return text.replaceAll('\\,', ',');
}

/** Parses one `--set` flag; a flag without `=` or without a path is refused (INSTALL_ERR_SET). */
export function parseSetFlag(text: string): SetFlag {
  const eq = text.indexOf('=');
  const rawPath = eq < 0 ? '' : text.slice(0, eq).trim();
  if (eq < 0 || rawPath === '')
    throw new MeshError(
      'INSTALL_ERR_SET',
      `--set ${JSON.stringify(text)}: expected path=value, e.g. --set profile=ambient or --set values.global.hub=registry.example/istio`,
    );
  const dotted = `spec.${rawPath}`;
  const raw = text.slice(eq + 1).trim();
  const value = ALWAYS_STRING.some((p) => dotted.startsWith(p)) ? raw : typedSetValue(raw);
  return { path: splitPath(dotted), value, text };
}

/** Applies parsed flags to an IstioOperator tree in order (later ones win). */
export function applySetFlags(iop: Tree, flags: readonly SetFlag[]): void {
  for (const f of flags) {
    try {
      setPath(iop, f.path, f.value);
    } catch (e) {
      if (!(e instanceof PathError)) throw e;
      throw new MeshError('INSTALL_ERR_SET', `--set ${JSON.stringify(f.text)}: ${e.message}`);
    }
  }
}
