/**
 * AuthorizationPolicies with `targetRefs` → the policies a waypoint enforces on each request, as istio
 * `pilot/pkg/security/authz/model/` builds them for a waypoint's Envoy: every HTTP field (hosts, methods, paths,
 * requestPrincipals, `when` conditions) and every action (ALLOW, DENY, AUDIT, CUSTOM). A policy targets a waypoint's
 * Gateway, the `istio-waypoint` GatewayClass (root namespace only: every waypoint), or a Service or ServiceEntry
 * behind a waypoint. What cannot be converted fails closed: an ALLOW rule is dropped (it allows less), a DENY,
 * AUDIT or CUSTOM rule matches every request it covers; a CUSTOM policy whose provider the mesh does not define
 * denies what it covers (istio `pilot/pkg/security/authz/builder` does the same for an unknown provider).
 */
import type { PolicyCondition, PolicyOperation, PolicyRule, PolicySource } from '../registry/manifest-schema.js';
import type { ResourceOf } from '../registry/manifest-dir.js';
import { ipMatch, stringMatch } from './authorization.js';
import type { IpMatchModel, StringMatchModel } from './types.js';
import { WAYPOINT_CLASS } from './waypoints.js';

export interface L7SourceModel {
  readonly principals: readonly StringMatchModel[];
  readonly notPrincipals: readonly StringMatchModel[];
  readonly requestPrincipals: readonly StringMatchModel[];
  readonly notRequestPrincipals: readonly StringMatchModel[];
  readonly namespaces: readonly StringMatchModel[];
  readonly notNamespaces: readonly StringMatchModel[];
  readonly ipBlocks: readonly IpMatchModel[];
  readonly notIpBlocks: readonly IpMatchModel[];
  readonly remoteIpBlocks: readonly IpMatchModel[];
  readonly notRemoteIpBlocks: readonly IpMatchModel[];
}
export interface L7OperationModel {
  readonly hosts: readonly StringMatchModel[];
  readonly notHosts: readonly StringMatchModel[];
  readonly ports: readonly number[];
  readonly notPorts: readonly number[];
  readonly methods: readonly StringMatchModel[];
  readonly notMethods: readonly StringMatchModel[];
  readonly paths: readonly StringMatchModel[];
  readonly notPaths: readonly StringMatchModel[];
}
export interface L7ConditionModel {
  readonly key: string;
  readonly values: readonly StringMatchModel[];
  readonly notValues: readonly StringMatchModel[];
  readonly cidrs: readonly IpMatchModel[];
  readonly notCidrs: readonly IpMatchModel[];
}
export interface L7RuleModel {
  readonly from: readonly L7SourceModel[];
  readonly to: readonly L7OperationModel[];
  readonly when: readonly L7ConditionModel[];
}
export type L7Action = 'ALLOW' | 'DENY' | 'AUDIT' | 'CUSTOM';
export interface L7PolicyModel {
  readonly name: string;
  readonly action: L7Action;
  readonly provider: string;
  readonly rules: readonly L7RuleModel[];
  /** `namespace/hostname` of the targeted Services; empty: the policy targets the waypoint itself. */
  readonly services: readonly string[];
  readonly dryRun: boolean;
}

/** Where a policy attaches: waypoints by `namespace/name`, every waypoint, or Services by `namespace/name`. */
export interface PolicyTargets {
  readonly gateways: readonly string[];
  readonly allWaypoints: boolean;
  readonly services: readonly string[];
  readonly serviceEntries: readonly string[];
}

type Strings = readonly (string | null)[] | null | undefined;
const strs = (v: Strings): string[] => v?.map(String) ?? [];

/** Condition keys a waypoint evaluates: the plain ones, and the ones with `[name]` parts. */
const PLAIN_KEYS = new Set([
  'source.ip',
  'remote.ip',
  'source.namespace',
  'source.principal',
  'request.auth.principal',
  'request.auth.audiences',
  'request.auth.presenter',
  'destination.ip',
  'destination.port',
  'connection.sni',
]);
const IP_KEYS = new Set(['source.ip', 'remote.ip', 'destination.ip']);
const HEADER_KEY = /^request\.headers\[[^\][]+\]$/;
const CLAIM_KEY = /^request\.auth\.claims(\[[^\][]+\])+$/;

/** The targets of `targetRef`/`targetRefs` (kinds a waypoint can enforce); `unknown` lists the rest. */
export function policyTargets(
  ap: ResourceOf<'AuthorizationPolicy'> | ResourceOf<'RequestAuthentication'>,
  rootNamespace: string,
): PolicyTargets & { unknown: string[] } {
  const ns = ap.metadata.namespace;
  const refs = [ap.spec.targetRef, ...(ap.spec.targetRefs ?? [])].filter(
    (r): r is Record<string, unknown> => typeof r === 'object' && r !== null,
  );
  const out = {
    gateways: [] as string[],
    allWaypoints: false,
    services: [] as string[],
    serviceEntries: [] as string[],
  };
  const unknown: string[] = [];
  for (const r of refs) {
    const group = typeof r['group'] === 'string' ? r['group'] : '';
    const kind = typeof r['kind'] === 'string' ? r['kind'] : '';
    const name = typeof r['name'] === 'string' ? r['name'] : '';
    if (group === 'gateway.networking.k8s.io' && kind === 'Gateway') out.gateways.push(`${ns}/${name}`);
    else if (
      group === 'gateway.networking.k8s.io' &&
      kind === 'GatewayClass' &&
      name === WAYPOINT_CLASS &&
      ns === rootNamespace
    )
      out.allWaypoints = true;
    else if (group === '' && kind === 'Service') out.services.push(`${ns}/${name}`);
    else if (group === 'networking.istio.io' && kind === 'ServiceEntry') out.serviceEntries.push(`${ns}/${name}`);
    else unknown.push(`${group === '' ? '' : `${group}/`}${kind} ${name}`);
  }
  return { ...out, unknown };
}

/** Istio's values for a list of ports or IPs: invalid ones cannot match (`undefined` in the result). */
function ports(v: Strings): (number | undefined)[] {
  return strs(v).map((s) => (/^[0-9]{1,5}$/.test(s) && Number(s) <= 65535 ? Number(s) : undefined));
}
const ips = (v: Strings): (IpMatchModel | undefined)[] => strs(v).map(ipMatch);

/** A path Istio matches with a template (`{*}`, `{**}`), which the waypoint does not evaluate. */
const isTemplate = (p: string): boolean => p.includes('{');

/**
 * A list as the waypoint matches it. `never`: values were given and none is valid, so the list can match nothing;
 * `broken`: some value cannot be evaluated.
 */
interface Listed<T> {
  readonly values: T[];
  readonly never: boolean;
  readonly broken: boolean;
}
function listed<T>(all: (T | undefined)[]): Listed<T> {
  const values = all.filter((x): x is T => x !== undefined);
  return { values, never: all.length > 0 && values.length === 0, broken: values.length !== all.length };
}

/** One rule: undefined when it can never match; `broken` when part of it cannot be evaluated as written. */
function convertRule(
  rule: PolicyRule | null,
  policyNs: string,
  trustDomain: string,
): { rule: L7RuleModel | undefined; broken: string[] } {
  const broken: string[] = [];
  let never = false;
  const take = <T>(l: Listed<T>, what: string, notList = false): T[] => {
    if (l.broken) broken.push(`${what} has values that cannot be evaluated`);
    if (l.never && !notList) never = true;
    return l.values;
  };
  const sa = (v: Strings): StringMatchModel[] =>
    strs(v).map((s) => {
      const [n, a] = s.includes('/') ? [s.split('/')[0]!, s.split('/')[1]!] : [policyNs, s];
      return { exact: `${trustDomain}/ns/${n}/sa/${a}` };
    });
  const from = (rule?.from ?? []).map((f): L7SourceModel => {
    const s: PolicySource = f?.source ?? {};
    return {
      principals: [...strs(s.principals).map(stringMatch), ...sa(s.serviceAccounts)],
      notPrincipals: [...strs(s.notPrincipals).map(stringMatch), ...sa(s.notServiceAccounts)],
      requestPrincipals: strs(s.requestPrincipals).map(stringMatch),
      notRequestPrincipals: strs(s.notRequestPrincipals).map(stringMatch),
      namespaces: strs(s.namespaces).map(stringMatch),
      notNamespaces: strs(s.notNamespaces).map(stringMatch),
      ipBlocks: take(listed(ips(s.ipBlocks)), 'ipBlocks'),
      notIpBlocks: take(listed(ips(s.notIpBlocks)), 'notIpBlocks', true),
      remoteIpBlocks: take(listed(ips(s.remoteIpBlocks)), 'remoteIpBlocks'),
      notRemoteIpBlocks: take(listed(ips(s.notRemoteIpBlocks)), 'notRemoteIpBlocks', true),
    };
  });
  const to = (rule?.to ?? []).map((t): L7OperationModel => {
    const o: PolicyOperation = t?.operation ?? {};
    const paths = (v: Strings, what: string, notList: boolean): StringMatchModel[] =>
      take(listed(strs(v).map((p) => (isTemplate(p) ? undefined : stringMatch(p)))), what, notList);
    return {
      hosts: strs(o.hosts).map(stringMatch),
      notHosts: strs(o.notHosts).map(stringMatch),
      ports: take(listed(ports(o.ports)), 'ports'),
      notPorts: take(listed(ports(o.notPorts)), 'notPorts', true),
      methods: strs(o.methods).map(stringMatch),
      notMethods: strs(o.notMethods).map(stringMatch),
      paths: paths(o.paths, 'paths', false),
      notPaths: paths(o.notPaths, 'notPaths', true),
    };
  });
  const when = (rule?.when ?? []).flatMap((c: PolicyCondition | null): L7ConditionModel[] => {
    if (c === null) return [];
    const key = c.key;
    if (!(PLAIN_KEYS.has(key) || HEADER_KEY.test(key) || CLAIM_KEY.test(key))) {
      broken.push(`condition key ${JSON.stringify(key)} is not one a waypoint evaluates`);
      return [];
    }
    if (IP_KEYS.has(key))
      return [
        {
          key,
          values: [],
          notValues: [],
          cidrs: take(listed(ips(c.values)), key),
          notCidrs: take(listed(ips(c.notValues)), `${key} notValues`, true),
        },
      ];
    if (key === 'destination.port') {
      const exact = (v: Strings, what: string, notList: boolean): StringMatchModel[] =>
        take(listed(ports(v)), what, notList).map((n) => ({ exact: String(n) }));
      return [
        {
          key,
          values: exact(c.values, key, false),
          notValues: exact(c.notValues, `${key} notValues`, true),
          cidrs: [],
          notCidrs: [],
        },
      ];
    }
    return [
      {
        key,
        values: strs(c.values).map(stringMatch),
        notValues: strs(c.notValues).map(stringMatch),
        cidrs: [],
        notCidrs: [],
      },
    ];
  });
  return { rule: never ? undefined : { from, to, when }, broken };
}

/** The rule that holds for every request. */
const EVERYTHING: L7RuleModel = { from: [], to: [], when: [] };

/**
 * One targeted AuthorizationPolicy as a waypoint enforces it, with `services` left for the caller to fill; and
 * warnings for what was narrowed or widened to fail closed.
 */
export function convertWaypointPolicy(
  ap: ResourceOf<'AuthorizationPolicy'>,
  trustDomain: string,
  providers: ReadonlyMap<string, unknown>,
): { policy: Omit<L7PolicyModel, 'services'>; warnings: string[] } {
  const name = `${ap.metadata.namespace}/${ap.metadata.name}`;
  const action: L7Action = ap.spec.action ?? 'ALLOW';
  const warnings: string[] = [];
  const rules: L7RuleModel[] = [];
  for (const [i, r] of (ap.spec.rules ?? []).entries()) {
    const c = convertRule(r, ap.metadata.namespace, trustDomain);
    if (c.broken.length === 0) {
      if (c.rule !== undefined) rules.push(c.rule);
      continue;
    }
    if (action === 'ALLOW')
      warnings.push(`${name} rule ${i}: ${c.broken.join('; ')}; ALLOW rule dropped (allows less)`);
    else {
      warnings.push(`${name} rule ${i}: ${c.broken.join('; ')}; the ${action} rule now matches every request`);
      rules.push(EVERYTHING);
    }
  }
  let provider = '';
  let effective = action;
  if (action === 'CUSTOM') {
    provider = ap.spec.provider?.name ?? '';
    if (!providers.has(provider)) {
      warnings.push(
        `${name}: extension provider ${JSON.stringify(provider)} is not defined in meshConfig; the requests it covers are denied`,
      );
      effective = 'DENY';
    }
  }
  return {
    policy: {
      name,
      action: effective,
      provider: effective === 'CUSTOM' ? provider : '',
      rules,
      dryRun: ap.metadata.annotations['istio.io/dry-run'] === 'true',
    },
    warnings,
  };
}
