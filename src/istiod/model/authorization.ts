import { ipBytes } from '../../lib/ip.js';
import type { Manifest } from '../registry/manifest-dir.js';
import { AuthzAction, AuthzScope, emptyMatch, type AuthorizationModel, type IpMatchModel, type MatchModel, type StringMatchModel } from './types.js';

export interface ConvertResult {
  /** Undefined when the policy is not for ztunnel (waypoint-targeted, AUDIT/CUSTOM, dry-run). */
  readonly policy: AuthorizationModel | undefined;
  /** Status-style notes: why something was skipped or narrowed. */
  readonly warnings: readonly string[];
}

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Obj) : {});
const strs = (v: unknown): string[] => (Array.isArray(v) ? v.map(String) : []);
const has = (o: Obj, k: string): boolean => Array.isArray(o[k]) ? (o[k] as unknown[]).length > 0 : o[k] !== undefined;

/** Istio's string patterns: `*` presence, `*x` suffix, `x*` prefix, else exact. */
export function stringMatch(s: string): StringMatchModel {
  if (s === '*') return { presence: true };
  if (s.startsWith('*')) return { suffix: s.slice(1) };
  if (s.endsWith('*')) return { prefix: s.slice(0, -1) };
  return { exact: s };
}

/** `a.b.c.d` → /32 (/128 for v6); CIDRs kept. Undefined when not an IP. */
export function ipMatch(s: string): IpMatchModel | undefined {
  const [ip = '', len] = s.split('/');
  const b = ipBytes(ip);
  if (b === undefined) return undefined;
  const max = b.length * 8;
  const length = len === undefined ? max : Number(len);
  if (!Number.isInteger(length) || length < 0 || length > max) return undefined;
  return { address: new Uint8Array(b), length };
}

function ports(v: unknown): number[] | undefined {
  const out: number[] = [];
  for (const p of strs(v)) {
    const n = Number(p);
    if (!/^\d+$/.test(p) || n > 65535) return undefined;
    out.push(n);
  }
  return out;
}

const L7_OPERATION = ['hosts', 'notHosts', 'methods', 'notMethods', 'paths', 'notPaths'];
const L7_SOURCE = ['remoteIpBlocks', 'notRemoteIpBlocks', 'requestPrincipals', 'notRequestPrincipals'];

/**
 * One AuthorizationPolicy (security.istio.io/v1) → the L4 Authorization ztunnel enforces (spec §9.2).
 * L7-only attributes make an ALLOW rule disappear (more restrictive) and are left out of a DENY rule.
 */
export function convertAuthorizationPolicy(ap: Manifest, rootNamespace: string): ConvertResult {
  const spec = ap.spec;
  const warnings: string[] = [];
  const name = `${ap.metadata.namespace}/${ap.metadata.name}`;
  if (spec['targetRef'] !== undefined || (Array.isArray(spec['targetRefs']) && spec['targetRefs'].length > 0)) {
    return { policy: undefined, warnings: [`${name}: targets a waypoint or gateway; not sent to ztunnel`] };
  }
  const action = typeof spec['action'] === 'string' ? spec['action'] : 'ALLOW';
  if (action !== 'ALLOW' && action !== 'DENY') return { policy: undefined, warnings: [`${name}: ztunnel does not support the ${action} action`] };
  if (ap.metadata.annotations['istio.io/dry-run'] === 'true') return { policy: undefined, warnings: [`${name}: dry-run policies are not sent to ztunnel`] };
  const selector = obj(obj(spec['selector'])['matchLabels']);
  const scope = Object.keys(selector).length > 0 ? AuthzScope.WORKLOAD_SELECTOR : ap.metadata.namespace === rootNamespace ? AuthzScope.GLOBAL : AuthzScope.NAMESPACE;
  const deny = action === 'DENY';
  const rules: AuthorizationModel['rules'][number][] = [];
  (Array.isArray(spec['rules']) ? spec['rules'] : []).forEach((raw, i) => {
    const rule = obj(raw);
    const where = `${name} rule ${i}`;
    let l7 = false;
    const clauses: { matches: MatchModel[] }[] = [];
    let invalid = false;
    const to = Array.isArray(rule['to']) ? rule['to'].map((t) => obj(obj(t)['operation'])) : [];
    if (to.length > 0) {
      const matches = to.map((op) => {
        if (L7_OPERATION.some((k) => has(op, k))) l7 = true;
        const p = ports(op['ports']);
        const np = ports(op['notPorts']);
        if (p === undefined || np === undefined) invalid = true;
        return { ...emptyMatch(), destinationPorts: p ?? [], notDestinationPorts: np ?? [] };
      });
      clauses.push({ matches });
    }
    const from = Array.isArray(rule['from']) ? rule['from'].map((f) => obj(obj(f)['source'])) : [];
    if (from.length > 0) {
      const matches = from.map((src) => {
        if (L7_SOURCE.some((k) => has(src, k))) l7 = true;
        const ips = (k: string): IpMatchModel[] => strs(src[k]).map((s) => ipMatch(s) ?? ((invalid = true), { address: new Uint8Array(), length: 0 }));
        const sas = (k: string): { namespace: string; serviceAccount: string }[] =>
          strs(src[k]).map((s) => (s.includes('/') ? { namespace: s.split('/')[0]!, serviceAccount: s.split('/')[1]! } : { namespace: ap.metadata.namespace, serviceAccount: s }));
        return {
          ...emptyMatch(),
          sourceIps: ips('ipBlocks'),
          notSourceIps: ips('notIpBlocks'),
          namespaces: strs(src['namespaces']).map(stringMatch),
          notNamespaces: strs(src['notNamespaces']).map(stringMatch),
          principals: strs(src['principals']).map(stringMatch),
          notPrincipals: strs(src['notPrincipals']).map(stringMatch),
          serviceAccounts: sas('serviceAccounts'),
          notServiceAccounts: sas('notServiceAccounts'),
        };
      });
      clauses.push({ matches });
    }
    for (const c of Array.isArray(rule['when']) ? rule['when'].map(obj) : []) {
      const key = typeof c['key'] === 'string' ? c['key'] : '';
      const values = strs(c['values']);
      const notValues = strs(c['notValues']);
      const m: Record<string, unknown> = { ...emptyMatch() };
      const ip = (xs: string[]): IpMatchModel[] => xs.map((s) => ipMatch(s) ?? ((invalid = true), { address: new Uint8Array(), length: 0 }));
      if (key === 'source.ip') Object.assign(m, { sourceIps: ip(values), notSourceIps: ip(notValues) });
      else if (key === 'source.namespace') Object.assign(m, { namespaces: values.map(stringMatch), notNamespaces: notValues.map(stringMatch) });
      else if (key === 'source.principal') Object.assign(m, { principals: values.map(stringMatch), notPrincipals: notValues.map(stringMatch) });
      else if (key === 'destination.ip') Object.assign(m, { destinationIps: ip(values), notDestinationIps: ip(notValues) });
      else if (key === 'destination.port') {
        const p = ports(values);
        const np = ports(notValues);
        if (p === undefined || np === undefined) invalid = true;
        Object.assign(m, { destinationPorts: p ?? [], notDestinationPorts: np ?? [] });
      } else {
        // An attribute ztunnel cannot see: in DENY the condition becomes an empty Match, which never matches, so
        // the rule cannot deny more than the author wrote.
        l7 = true;
        clauses.push({ matches: [emptyMatch()] });
        continue;
      }
      clauses.push({ matches: [m as unknown as MatchModel] });
    }
    if (invalid) {
      warnings.push(`${where}: invalid port or IP; rule dropped`);
      return;
    }
    if (l7) {
      if (!deny) {
        warnings.push(`${where}: uses HTTP attributes ztunnel cannot see; ALLOW rule dropped (more restrictive)`);
        return;
      }
      warnings.push(`${where}: HTTP attributes ignored by ztunnel in this DENY rule`);
    }
    rules.push({ clauses });
  });
  return {
    policy: { name: ap.metadata.name, namespace: ap.metadata.namespace, scope, action: deny ? AuthzAction.DENY : AuthzAction.ALLOW, rules, dryRun: false },
    warnings,
  };
}
