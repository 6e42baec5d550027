// The waypoint's authorization of HTTP requests: Istio's AuthorizationPolicy as a waypoint's Envoy enforces it with
// its RBAC and ext_authz filters. istio pilot/pkg/security/authz/builder/builder.go orders the actions (CUSTOM, then
// DENY, then ALLOW; AUDIT only logs; dry-run policies only shadow), and istio pilot/pkg/security/authz/model/
// generator.go, permission.go and principal.go say what each field and condition key matches.
//
// istiod sends the policies as amesh.waypoint.v1.Policy (proto/amesh/waypoint/v1/waypoint.proto), already resolved
// to the Services they cover and with Istio's `*` patterns turned into StringMatch. `l7PoliciesFromXds` converts them
// once into the frozen model below; `authorizeRequest` evaluates only that model. A policy the waypoint cannot
// understand is not dropped, which would open what it guards: it becomes a stand-in that fails closed (an ALLOW that
// allows nothing, a DENY that denies every request it covers, a CUSTOM that always asks its provider).
import net from 'node:net';
import type { Address, StringMatch } from '../api/istio/security/authorization_pb.js';
import {
  Action,
  type Condition,
  type Operation,
  type Policy,
  type Rule,
  type Source,
} from '../api/amesh/waypoint/v1/waypoint_pb.js';
import { formatIp, ipBytes } from '../lib/ip.js';

/** What a matching policy does. */
export type L7Action = 'ALLOW' | 'DENY' | 'AUDIT' | 'CUSTOM';

/**
 * Istio's StringMatch. `presence` holds for a value that is there and not empty; for a request header, for any value
 * the header has, empty too (Envoy's `present_match`, which Istio uses for headers).
 */
export interface L7StringMatch {
  readonly kind: 'exact' | 'prefix' | 'suffix' | 'presence';
  /** Empty for `presence`; lower case for a host. */
  readonly value: string;
}

/** An IP network: an IPv4 address as one 32-bit word, an IPv6 one as four, of which the first `prefix` bits count. */
export interface L7Cidr {
  readonly family: 4 | 6;
  readonly words: readonly number[];
  readonly prefix: number;
  /** `address/prefix`, for logs. */
  readonly text: string;
}

/** Each list that is not empty must hold: one of its entries matches, or, for a `not` list, none does. */
export interface L7Source {
  /** Against the peer's SPIFFE identity without `spiffe://`. */
  readonly principals: readonly L7StringMatch[];
  readonly notPrincipals: readonly L7StringMatch[];
  /** Against the verified JWT's `<iss>/<sub>`. */
  readonly requestPrincipals: readonly L7StringMatch[];
  readonly notRequestPrincipals: readonly L7StringMatch[];
  /** Against the namespace in the peer's SPIFFE identity. */
  readonly namespaces: readonly L7StringMatch[];
  readonly notNamespaces: readonly L7StringMatch[];
  /** Against the client workload's address. */
  readonly ipBlocks: readonly L7Cidr[];
  readonly notIpBlocks: readonly L7Cidr[];
  /** Against the original client's address. */
  readonly remoteIpBlocks: readonly L7Cidr[];
  readonly notRemoteIpBlocks: readonly L7Cidr[];
}

/** Each list that is not empty must hold, as in `L7Source`. */
export interface L7Operation {
  /** Without case (values in lower case), against the Host with its port and without it. */
  readonly hosts: readonly L7StringMatch[];
  readonly notHosts: readonly L7StringMatch[];
  readonly ports: readonly number[];
  readonly notPorts: readonly number[];
  readonly methods: readonly L7StringMatch[];
  readonly notMethods: readonly L7StringMatch[];
  /** Against the path without its query. */
  readonly paths: readonly L7StringMatch[];
  readonly notPaths: readonly L7StringMatch[];
}

/** The request attribute a string condition looks at. */
export type L7StringAttribute =
  /** A request header by its lower-case name. */
  | { readonly kind: 'header'; readonly name: string }
  /** `request.headers[:authority]` or `[host]`: the Host as received. */
  | { readonly kind: 'authority' }
  /** `request.headers[:method]`. */
  | { readonly kind: 'method' }
  /** `request.headers[:path]`: the request target as received, query included. */
  | { readonly kind: 'target' }
  /** A JWT claim; more than one name walks into nested objects. */
  | { readonly kind: 'claim'; readonly path: readonly string[] }
  | {
      readonly kind:
        | 'source.namespace'
        | 'source.principal'
        | 'request.auth.principal'
        | 'request.auth.audiences'
        | 'request.auth.presenter'
        | 'connection.sni';
    };

/**
 * One `when` condition: it holds when `values`/`cidrs`/`ports` is empty or has an entry that matches, and no entry of
 * the `not` list matches.
 */
export type L7Condition =
  | {
      readonly kind: 'string';
      readonly key: string;
      readonly attribute: L7StringAttribute;
      readonly values: readonly L7StringMatch[];
      readonly notValues: readonly L7StringMatch[];
    }
  | {
      readonly kind: 'ip';
      readonly key: string;
      readonly attribute: 'source.ip' | 'remote.ip' | 'destination.ip';
      readonly cidrs: readonly L7Cidr[];
      readonly notCidrs: readonly L7Cidr[];
    }
  | {
      readonly kind: 'port';
      readonly key: string;
      readonly ports: readonly number[];
      readonly notPorts: readonly number[];
    };

/** Holds when one of `from` holds (or it is empty), one of `to` does (or it is empty) and every condition does. */
export interface L7Rule {
  readonly from: readonly L7Source[];
  readonly to: readonly L7Operation[];
  readonly when: readonly L7Condition[];
  /** It names something only HTTP has (hosts, methods, paths, request principals, request.* keys). */
  readonly httpOnly: boolean;
}

/** One converted policy. */
export interface L7Policy {
  /** `<namespace>/<name>` of the AuthorizationPolicy. */
  readonly name: string;
  readonly action: L7Action;
  /** CUSTOM: the extension provider to consult. */
  readonly provider: string;
  /** The Services (`<namespace>/<hostname>`) whose requests the policy covers; empty: every request. */
  readonly services: readonly string[];
  readonly dryRun: boolean;
  /** The policy matches a request when one of its rules holds; no rules: it never matches. */
  readonly rules: readonly L7Rule[];
  /** Set on the fail-closed stand-in for a policy that could not be converted: why. */
  readonly rejected: string | undefined;
}

/** What a request looks like to the policies. */
export interface RequestAttributes {
  /**
   * False for a TCP connection through the waypoint (method, path, host and headers empty): as Istio builds its TCP
   * filters (istio `pilot/pkg/security/authz/model/model.go` `checkError`), an ALLOW rule that names HTTP-only
   * attributes never holds, and a DENY, AUDIT or CUSTOM rule holds without them.
   */
  readonly http: boolean;
  /** `<namespace>/<hostname>` of the destination Service, if any. */
  readonly service: string | undefined;
  readonly method: string;
  /** The request target as received; may include `?query`. */
  readonly path: string;
  /** The Host (`:authority`) header as received; may have a port. */
  readonly host: string;
  /** node's IncomingHttpHeaders: lower-case names. */
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  /** The peer's SPIFFE identity without `spiffe://`, e.g. cluster.local/ns/default/sa/sleep. */
  readonly sourcePrincipal: string | undefined;
  /** The client workload's IP (IPv4 or IPv6 text). */
  readonly sourceIp: string;
  /** The original client's IP; the same as `sourceIp` while X-Forwarded-For is not trusted. */
  readonly remoteIp: string;
  readonly destinationIp: string;
  readonly destinationPort: number;
  readonly sni: string | undefined;
  /** The request's verified JWT, if any. */
  readonly jwt:
    | {
        readonly principal: string;
        readonly audiences: readonly string[];
        readonly presenter: string | undefined;
        readonly claims: Readonly<Record<string, unknown>>;
      }
    | undefined;
}

export interface AuthorizationDecision {
  readonly allowed: boolean;
  /**
   * The policy that decided a denial (`<ns>/<name>`), or the reason ('no ALLOW policy matched'). For an allowed
   * request: the ALLOW policy that allowed it, or 'no ALLOW policy applies'.
   */
  readonly reason: string;
  /** CUSTOM policies whose rules matched (the caller consults their provider; a provider it cannot reach denies). */
  readonly custom: readonly L7Policy[];
  /** AUDIT policies that matched (logged by the caller). */
  readonly audited: readonly string[];
  /**
   * Dry-run policies and what they would have decided, for the log: every dry-run DENY that covers the request
   * (would deny when it matches), every dry-run ALLOW that does (together, as Envoy's shadow rules: they would deny
   * when none of them matches), and the dry-run AUDIT and CUSTOM policies that match (never a denial of their own).
   */
  readonly shadow: readonly { policy: string; wouldDeny: boolean }[];
}

const NO_ALLOW_MATCHED = 'no ALLOW policy matched';
const NO_ALLOW_APPLIES = 'no ALLOW policy applies';

// ---- conversion ----

/** Why a policy cannot be converted; caught per policy. */
class Unconvertible extends Error {}

const NONE: readonly never[] = Object.freeze([]);
const PRESENCE: L7StringMatch = Object.freeze({ kind: 'presence', value: '' });
const MATCH_ALL_RULE: L7Rule = Object.freeze({ from: NONE, to: NONE, when: NONE, httpOnly: false });

function frozenList<T, U>(items: readonly T[], convert: (item: T, index: number) => U): readonly U[] {
  return items.length === 0 ? NONE : Object.freeze(items.map(convert));
}

function convertStringMatch(m: StringMatch, where: string, lowerCase: boolean): L7StringMatch {
  const t = m.matchType;
  switch (t.case) {
    case 'exact':
    case 'prefix':
    case 'suffix':
      return Object.freeze({ kind: t.case, value: lowerCase ? t.value.toLowerCase() : t.value });
    case 'presence':
      return PRESENCE;
    default:
      throw new Unconvertible(`${where}: a StringMatch with no match type`);
  }
}

function stringMatches(items: readonly StringMatch[], where: string, lowerCase = false): readonly L7StringMatch[] {
  return frozenList(items, (m, i) => convertStringMatch(m, `${where}[${i}]`, lowerCase));
}

function convertCidr(a: Address, where: string): L7Cidr {
  const b = a.address;
  if (b.length !== 4 && b.length !== 16) {
    throw new Unconvertible(`${where}: an address of ${b.length} bytes (an IP has 4 or 16)`);
  }
  const bits = b.length * 8;
  if (a.length > bits) throw new Unconvertible(`${where}: prefix length ${a.length} for an address of ${bits} bits`);
  const words: number[] = [];
  for (let i = 0; i < b.length; i += 4)
    words.push(((b[i]! << 24) | (b[i + 1]! << 16) | (b[i + 2]! << 8) | b[i + 3]!) >>> 0);
  return Object.freeze({
    family: b.length === 4 ? 4 : 6,
    words: Object.freeze(words),
    prefix: a.length,
    text: `${formatIp(b) ?? '?'}/${a.length}`,
  });
}

function cidrs(items: readonly Address[], where: string): readonly L7Cidr[] {
  return frozenList(items, (a, i) => convertCidr(a, `${where}[${i}]`));
}

function convertSource(s: Source, where: string): L7Source {
  return Object.freeze({
    principals: stringMatches(s.principals, `${where}.principals`),
    notPrincipals: stringMatches(s.notPrincipals, `${where}.not_principals`),
    requestPrincipals: stringMatches(s.requestPrincipals, `${where}.request_principals`),
    notRequestPrincipals: stringMatches(s.notRequestPrincipals, `${where}.not_request_principals`),
    namespaces: stringMatches(s.namespaces, `${where}.namespaces`),
    notNamespaces: stringMatches(s.notNamespaces, `${where}.not_namespaces`),
    ipBlocks: cidrs(s.ipBlocks, `${where}.ip_blocks`),
    notIpBlocks: cidrs(s.notIpBlocks, `${where}.not_ip_blocks`),
    remoteIpBlocks: cidrs(s.remoteIpBlocks, `${where}.remote_ip_blocks`),
    notRemoteIpBlocks: cidrs(s.notRemoteIpBlocks, `${where}.not_remote_ip_blocks`),
  });
}

function convertOperation(o: Operation, where: string): L7Operation {
  return Object.freeze({
    hosts: stringMatches(o.hosts, `${where}.hosts`, true),
    notHosts: stringMatches(o.notHosts, `${where}.not_hosts`, true),
    ports: o.ports.length === 0 ? NONE : Object.freeze([...o.ports]),
    notPorts: o.notPorts.length === 0 ? NONE : Object.freeze([...o.notPorts]),
    methods: stringMatches(o.methods, `${where}.methods`),
    notMethods: stringMatches(o.notMethods, `${where}.not_methods`),
    paths: stringMatches(o.paths, `${where}.paths`),
    notPaths: stringMatches(o.notPaths, `${where}.not_paths`),
  });
}

type SimpleStringKey = Exclude<L7StringAttribute['kind'], 'header' | 'authority' | 'method' | 'target' | 'claim'>;

const SIMPLE_STRING_KEYS: ReadonlySet<string> = new Set<SimpleStringKey>([
  'source.namespace',
  'source.principal',
  'request.auth.principal',
  'request.auth.audiences',
  'request.auth.presenter',
  'connection.sni',
]);

function isSimpleStringKey(key: string): key is SimpleStringKey {
  return SIMPLE_STRING_KEYS.has(key);
}

/** The names in `[a][b]...`, each non-empty and without brackets; undefined when `s` is not of that form. */
function bracketedNames(s: string): string[] | undefined {
  const names: string[] = [];
  let i = 0;
  while (i < s.length) {
    if (s[i] !== '[') return undefined;
    const end = s.indexOf(']', i + 1);
    if (end < 0) return undefined;
    const name = s.slice(i + 1, end);
    if (name === '' || name.includes('[')) return undefined;
    names.push(name);
    i = end + 1;
  }
  return names.length === 0 ? undefined : names;
}

const HEADERS_KEY = 'request.headers';
const CLAIMS_KEY = 'request.auth.claims';

function stringAttribute(key: string, where: string): L7StringAttribute {
  if (isSimpleStringKey(key)) return Object.freeze({ kind: key });
  if (key.startsWith(`${HEADERS_KEY}[`)) {
    const names = bracketedNames(key.slice(HEADERS_KEY.length));
    if (names?.length !== 1) throw new Unconvertible(`${where}: "${key}" is not request.headers[<name>]`);
    const name = names[0]!.toLowerCase();
    if (name === ':authority' || name === 'host') return Object.freeze({ kind: 'authority' });
    if (name === ':method') return Object.freeze({ kind: 'method' });
    if (name === ':path') return Object.freeze({ kind: 'target' });
    return Object.freeze({ kind: 'header', name });
  }
  if (key.startsWith(`${CLAIMS_KEY}[`)) {
    const names = bracketedNames(key.slice(CLAIMS_KEY.length));
    if (names === undefined) throw new Unconvertible(`${where}: "${key}" is not request.auth.claims[<name>]...`);
    return Object.freeze({ kind: 'claim', path: Object.freeze(names) });
  }
  throw new Unconvertible(`${where}: unknown condition key "${key}"`);
}

function conditionPort(m: StringMatch, where: string): number {
  const t = m.matchType;
  if (t.case !== 'exact' || !/^\d{1,5}$/.test(t.value) || Number(t.value) > 65535) {
    throw new Unconvertible(`${where}: destination.port takes port numbers`);
  }
  return Number(t.value);
}

function convertCondition(c: Condition, where: string): L7Condition {
  const key = c.key;
  const hasValues = c.values.length > 0 || c.notValues.length > 0;
  const hasCidrs = c.cidrs.length > 0 || c.notCidrs.length > 0;
  if (!hasValues && !hasCidrs) throw new Unconvertible(`${where} (${key}): no values, not_values, cidrs or not_cidrs`);
  if (key === 'source.ip' || key === 'remote.ip' || key === 'destination.ip') {
    if (hasValues) throw new Unconvertible(`${where} (${key}): an IP attribute takes cidrs, not values`);
    return Object.freeze({
      kind: 'ip',
      key,
      attribute: key,
      cidrs: cidrs(c.cidrs, `${where}.cidrs`),
      notCidrs: cidrs(c.notCidrs, `${where}.not_cidrs`),
    });
  }
  if (hasCidrs) throw new Unconvertible(`${where} (${key}): only an IP attribute takes cidrs`);
  if (key === 'destination.port') {
    return Object.freeze({
      kind: 'port',
      key,
      ports: frozenList(c.values, (m, i) => conditionPort(m, `${where}.values[${i}]`)),
      notPorts: frozenList(c.notValues, (m, i) => conditionPort(m, `${where}.not_values[${i}]`)),
    });
  }
  return Object.freeze({
    kind: 'string',
    key,
    attribute: stringAttribute(key, where),
    values: stringMatches(c.values, `${where}.values`),
    notValues: stringMatches(c.notValues, `${where}.not_values`),
  });
}

function convertRule(r: Rule, where: string): L7Rule {
  if (r.from.length === 0 && r.to.length === 0 && r.when.length === 0) return MATCH_ALL_RULE;
  const from = frozenList(r.from, (s, i) => convertSource(s, `${where}.from[${i}]`));
  const to = frozenList(r.to, (o, i) => convertOperation(o, `${where}.to[${i}]`));
  const when = frozenList(r.when, (c, i) => convertCondition(c, `${where}.when[${i}]`));
  const httpOnly =
    from.some((s) => s.requestPrincipals.length + s.notRequestPrincipals.length > 0) ||
    to.some(
      (o) =>
        o.hosts.length +
          o.notHosts.length +
          o.methods.length +
          o.notMethods.length +
          o.paths.length +
          o.notPaths.length >
        0,
    ) ||
    when.some((c) => c.kind === 'string' && isHttpAttribute(c.attribute));
  return Object.freeze({ from, to, when, httpOnly });
}

/** Whether a condition reads the HTTP request (a header, the JWT) rather than the connection. */
function isHttpAttribute(a: L7StringAttribute): boolean {
  return a.kind !== 'source.namespace' && a.kind !== 'source.principal' && a.kind !== 'connection.sni';
}

function convertAction(a: Action): L7Action | undefined {
  switch (a) {
    case Action.ALLOW:
      return 'ALLOW';
    case Action.DENY:
      return 'DENY';
    case Action.AUDIT:
      return 'AUDIT';
    case Action.CUSTOM:
      return 'CUSTOM';
    default:
      return undefined;
  }
}

const FAIL_CLOSED_EFFECT: Readonly<Record<L7Action, string>> = {
  ALLOW: 'it allows nothing',
  DENY: 'it denies every request it covers',
  CUSTOM: 'its provider is asked about every request it covers',
  AUDIT: 'it audits every request it covers',
};

function failClosed(p: Policy, action: L7Action, reason: string): L7Policy {
  return Object.freeze({
    name: p.name,
    action,
    provider: p.provider,
    services: Object.freeze([...p.services]),
    dryRun: p.dryRun,
    // An ALLOW that allows nothing still makes its Services ALLOW-governed; the others match every request.
    rules: action === 'ALLOW' ? NONE : Object.freeze([MATCH_ALL_RULE]),
    rejected: reason,
  });
}

/**
 * Converts proto policies. A policy that cannot be understood is not dropped: its reason is in `rejected`, and
 * `policies` holds its fail-closed stand-in (same name, services and dry-run): for an ALLOW, a policy that matches
 * nothing; for a DENY, CUSTOM or AUDIT (or an action this waypoint does not know, taken as DENY), a policy that
 * matches every request it covers.
 */
export function l7PoliciesFromXds(policies: readonly Policy[]): {
  readonly policies: readonly L7Policy[];
  readonly rejected: readonly string[];
} {
  const out: L7Policy[] = [];
  const rejected: string[] = [];
  for (const p of policies) {
    const action = convertAction(p.action);
    if (action === undefined) {
      const reason = `policy ${p.name}: unknown action ${p.action}; it denies every request it covers`;
      rejected.push(reason);
      out.push(failClosed(p, 'DENY', reason));
      continue;
    }
    try {
      if (action === 'CUSTOM' && p.provider === '') throw new Unconvertible('a CUSTOM policy without a provider');
      out.push(
        Object.freeze({
          name: p.name,
          action,
          provider: p.provider,
          services: Object.freeze([...p.services]),
          dryRun: p.dryRun,
          rules: frozenList(p.rules, (r, i) => convertRule(r, `rules[${i}]`)),
          rejected: undefined,
        }),
      );
    } catch (e) {
      if (!(e instanceof Unconvertible)) throw e;
      const reason = `policy ${p.name} (${action}): ${e.message}; ${FAIL_CLOSED_EFFECT[action]}`;
      rejected.push(reason);
      out.push(failClosed(p, action, reason));
    }
  }
  return Object.freeze({ policies: Object.freeze(out), rejected: Object.freeze(rejected) });
}

// ---- evaluation ----

/** A request IP: IPv4 as one 32-bit word, IPv6 as four; an IPv4-mapped IPv6 address is its IPv4 address. */
interface ParsedIp {
  readonly family: 4 | 6;
  readonly words: readonly number[];
}

function parseIp(text: string): ParsedIp | undefined {
  const zone = text.indexOf('%');
  const s = zone < 0 ? text : text.slice(0, zone);
  const family = net.isIP(s);
  if (family === 4) {
    let v = 0;
    let part = 0;
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c === 46) {
        v = v * 256 + part;
        part = 0;
      } else part = part * 10 + (c - 48);
    }
    return { family: 4, words: [v * 256 + part] };
  }
  if (family !== 6) return undefined;
  const b = ipBytes(s);
  if (b === undefined) return undefined;
  const words = [b.readUInt32BE(0), b.readUInt32BE(4), b.readUInt32BE(8), b.readUInt32BE(12)];
  if (words[0] === 0 && words[1] === 0 && words[2] === 0xffff) return { family: 4, words: [words[3]!] };
  return { family: 6, words };
}

function cidrContains(c: L7Cidr, ip: ParsedIp | undefined): boolean {
  if (ip === undefined || ip.family !== c.family) return false;
  let bits = c.prefix;
  for (let i = 0; bits > 0; i++, bits -= 32) {
    const mask = bits >= 32 ? -1 : ~(-1 >>> bits);
    if (((ip.words[i]! ^ c.words[i]!) & mask) !== 0) return false;
  }
  return true;
}

function anyCidr(list: readonly L7Cidr[], ip: ParsedIp | undefined): boolean {
  for (const c of list) if (cidrContains(c, ip)) return true;
  return false;
}

function ipHolds(pos: readonly L7Cidr[], neg: readonly L7Cidr[], ip: ParsedIp | undefined): boolean {
  return (pos.length === 0 || anyCidr(pos, ip)) && (neg.length === 0 || !anyCidr(neg, ip));
}

function portHolds(pos: readonly number[], neg: readonly number[], port: number): boolean {
  return (pos.length === 0 || pos.includes(port)) && (neg.length === 0 || !neg.includes(port));
}

function matchOne(m: L7StringMatch, v: string): boolean {
  switch (m.kind) {
    case 'exact':
      return v === m.value;
    case 'prefix':
      return v.startsWith(m.value);
    case 'suffix':
      return v.endsWith(m.value);
    case 'presence':
      return v !== '';
  }
}

/** Whether one of `list` matches `v`; nothing (undefined) matches nothing. */
function anyMatch(list: readonly L7StringMatch[], v: string | undefined): boolean {
  if (v === undefined) return false;
  for (const m of list) if (matchOne(m, v)) return true;
  return false;
}

function stringHolds(pos: readonly L7StringMatch[], neg: readonly L7StringMatch[], v: string | undefined): boolean {
  return (pos.length === 0 || anyMatch(pos, v)) && (neg.length === 0 || !anyMatch(neg, v));
}

/**
 * Whether one of `list` matches the value, or one string of a list value (a header given more than once, a JWT's
 * audiences, a claim that is a list). Elements that are not strings match nothing. `presentIsEnough`: `presence`
 * holds for an empty string too (request headers).
 */
function anyMatchValue(list: readonly L7StringMatch[], v: unknown, presentIsEnough: boolean): boolean {
  if (typeof v === 'string') {
    if (presentIsEnough) {
      for (const m of list) if (m.kind === 'presence' || matchOne(m, v)) return true;
      return false;
    }
    return anyMatch(list, v);
  }
  if (!Array.isArray(v)) return false;
  for (const x of v as readonly unknown[])
    if (typeof x === 'string' && anyMatchValue(list, x, presentIsEnough)) return true;
  return false;
}

function isRecord(v: unknown): v is Readonly<Record<string, unknown>> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function claimValue(claims: Readonly<Record<string, unknown>>, path: readonly string[]): unknown {
  let v: unknown = claims;
  for (const name of path) {
    if (!isRecord(v) || !Object.prototype.hasOwnProperty.call(v, name)) return undefined;
    v = v[name];
  }
  return v;
}

/** The path of a request target without its query or fragment; an absolute-form target's path (`/` if none). */
function pathOf(target: string): string {
  let start = 0;
  if (!target.startsWith('/')) {
    const scheme = target.indexOf('://');
    if (scheme > 0 && /^[A-Za-z][A-Za-z0-9+.-]*$/.test(target.slice(0, scheme))) {
      const slash = target.indexOf('/', scheme + 3);
      if (slash < 0) return '/';
      start = slash;
    }
  }
  let end = target.length;
  const q = target.indexOf('?', start);
  if (q >= 0) end = q;
  const f = target.indexOf('#', start);
  if (f >= 0 && f < end) end = f;
  return start === 0 && end === target.length ? target : target.slice(start, end);
}

/** `host` without a trailing `:port` (`[v6]:port` keeps its brackets); `host` itself when it has none. */
function hostWithoutPort(host: string): string {
  const colon = host.lastIndexOf(':');
  if (colon < 0 || colon === host.length - 1) return host;
  for (let i = colon + 1; i < host.length; i++) {
    const c = host.charCodeAt(i);
    if (c < 48 || c > 57) return host;
  }
  if (host.startsWith('[')) return host[colon - 1] === ']' ? host.slice(0, colon) : host;
  return host.indexOf(':') === colon ? host.slice(0, colon) : host;
}

/** The namespace in `<td>/ns/<ns>/sa/<sa>`. */
function namespaceOf(principal: string | undefined): string | undefined {
  if (principal === undefined) return undefined;
  const at = principal.indexOf('/ns/');
  if (at < 0) return undefined;
  const start = at + 4;
  const end = principal.indexOf('/', start);
  return end < 0 ? principal.slice(start) : principal.slice(start, end);
}

const UNSET = Symbol('unset');

/** One request, with what the policies derive from it computed when first needed and then kept. */
class RequestView {
  private pathValue: string | typeof UNSET = UNSET;
  private hostValue: string | typeof UNSET = UNSET;
  private hostNoPortValue: string | typeof UNSET = UNSET;
  private namespaceValue: string | undefined | typeof UNSET = UNSET;
  private sourceIpValue: ParsedIp | undefined | typeof UNSET = UNSET;
  private remoteIpValue: ParsedIp | undefined | typeof UNSET = UNSET;
  private destinationIpValue: ParsedIp | undefined | typeof UNSET = UNSET;

  constructor(readonly req: RequestAttributes) {}

  get path(): string {
    if (this.pathValue === UNSET) this.pathValue = pathOf(this.req.path);
    return this.pathValue;
  }

  /** The Host in lower case. */
  get host(): string {
    if (this.hostValue === UNSET) this.hostValue = this.req.host.toLowerCase();
    return this.hostValue;
  }

  get hostNoPort(): string {
    if (this.hostNoPortValue === UNSET) this.hostNoPortValue = hostWithoutPort(this.host);
    return this.hostNoPortValue;
  }

  get namespace(): string | undefined {
    if (this.namespaceValue === UNSET) this.namespaceValue = namespaceOf(this.req.sourcePrincipal);
    return this.namespaceValue;
  }

  get sourceIp(): ParsedIp | undefined {
    if (this.sourceIpValue === UNSET) this.sourceIpValue = parseIp(this.req.sourceIp);
    return this.sourceIpValue;
  }

  get remoteIp(): ParsedIp | undefined {
    if (this.remoteIpValue === UNSET) {
      this.remoteIpValue = this.req.remoteIp === this.req.sourceIp ? this.sourceIp : parseIp(this.req.remoteIp);
    }
    return this.remoteIpValue;
  }

  get destinationIp(): ParsedIp | undefined {
    if (this.destinationIpValue === UNSET) this.destinationIpValue = parseIp(this.req.destinationIp);
    return this.destinationIpValue;
  }
}

function anyHostMatch(list: readonly L7StringMatch[], r: RequestView): boolean {
  const host = r.host;
  if (anyMatch(list, host)) return true;
  const bare = r.hostNoPort;
  return bare !== host && anyMatch(list, bare);
}

function sourceHolds(s: L7Source, r: RequestView): boolean {
  const req = r.req;
  return (
    stringHolds(s.principals, s.notPrincipals, req.sourcePrincipal) &&
    (!req.http || stringHolds(s.requestPrincipals, s.notRequestPrincipals, req.jwt?.principal)) &&
    ((s.namespaces.length === 0 && s.notNamespaces.length === 0) ||
      stringHolds(s.namespaces, s.notNamespaces, r.namespace)) &&
    ((s.ipBlocks.length === 0 && s.notIpBlocks.length === 0) || ipHolds(s.ipBlocks, s.notIpBlocks, r.sourceIp)) &&
    ((s.remoteIpBlocks.length === 0 && s.notRemoteIpBlocks.length === 0) ||
      ipHolds(s.remoteIpBlocks, s.notRemoteIpBlocks, r.remoteIp))
  );
}

function operationHolds(o: L7Operation, r: RequestView): boolean {
  const req = r.req;
  if (!portHolds(o.ports, o.notPorts, req.destinationPort)) return false;
  return (
    !req.http ||
    ((o.hosts.length === 0 || anyHostMatch(o.hosts, r)) &&
      (o.notHosts.length === 0 || !anyHostMatch(o.notHosts, r)) &&
      stringHolds(o.methods, o.notMethods, req.method) &&
      ((o.paths.length === 0 && o.notPaths.length === 0) || stringHolds(o.paths, o.notPaths, r.path)))
  );
}

/** The value a string condition looks at: a string, a list of them (or of anything, for a claim), or undefined. */
function attributeValue(a: L7StringAttribute, r: RequestView): unknown {
  const req = r.req;
  switch (a.kind) {
    case 'header':
      return req.headers[a.name];
    case 'authority':
      return req.host !== '' ? req.host : req.headers.host;
    case 'method':
      return req.method;
    case 'target':
      return req.path;
    case 'claim':
      return req.jwt === undefined ? undefined : claimValue(req.jwt.claims, a.path);
    case 'source.namespace':
      return r.namespace;
    case 'source.principal':
      return req.sourcePrincipal;
    case 'request.auth.principal':
      return req.jwt?.principal;
    case 'request.auth.audiences':
      return req.jwt?.audiences;
    case 'request.auth.presenter':
      return req.jwt?.presenter;
    case 'connection.sni':
      return req.sni;
  }
}

function ipAttribute(a: 'source.ip' | 'remote.ip' | 'destination.ip', r: RequestView): ParsedIp | undefined {
  switch (a) {
    case 'source.ip':
      return r.sourceIp;
    case 'remote.ip':
      return r.remoteIp;
    case 'destination.ip':
      return r.destinationIp;
  }
}

function conditionHolds(c: L7Condition, r: RequestView): boolean {
  switch (c.kind) {
    case 'ip':
      return ipHolds(c.cidrs, c.notCidrs, ipAttribute(c.attribute, r));
    case 'port':
      return portHolds(c.ports, c.notPorts, r.req.destinationPort);
    case 'string': {
      if (!r.req.http && isHttpAttribute(c.attribute)) return true;
      const v = attributeValue(c.attribute, r);
      const header = c.attribute.kind === 'header';
      return (
        (c.values.length === 0 || anyMatchValue(c.values, v, header)) &&
        (c.notValues.length === 0 || !anyMatchValue(c.notValues, v, header))
      );
    }
  }
}

function ruleHolds(rule: L7Rule, r: RequestView, action: L7Action): boolean {
  if (!r.req.http && rule.httpOnly && action === 'ALLOW') return false;
  if (rule.from.length > 0) {
    let any = false;
    for (const s of rule.from) {
      if (sourceHolds(s, r)) {
        any = true;
        break;
      }
    }
    if (!any) return false;
  }
  if (rule.to.length > 0) {
    let any = false;
    for (const o of rule.to) {
      if (operationHolds(o, r)) {
        any = true;
        break;
      }
    }
    if (!any) return false;
  }
  for (const c of rule.when) if (!conditionHolds(c, r)) return false;
  return true;
}

function policyMatches(p: L7Policy, r: RequestView): boolean {
  for (const rule of p.rules) if (ruleHolds(rule, r, p.action)) return true;
  return false;
}

function applies(p: L7Policy, service: string | undefined): boolean {
  return p.services.length === 0 || (service !== undefined && p.services.includes(service));
}

/**
 * Decides one request. Every policy that covers the request (its `services` is empty or names the request's) takes
 * part: the matching CUSTOM policies are returned for the caller to consult their providers; a matching DENY denies;
 * then, if any ALLOW covers the request, one of them must match. AUDIT and dry-run policies never change the decision.
 */
export function authorizeRequest(policies: readonly L7Policy[], req: RequestAttributes): AuthorizationDecision {
  const r = new RequestView(req);
  let custom: L7Policy[] | undefined;
  let audited: string[] | undefined;
  let shadow: { policy: string; wouldDeny: boolean }[] | undefined;
  let dryAllows: string[] | undefined;
  let dryAllowMatched = false;
  let deniedBy: string | undefined;
  let allowGoverned = false;
  let allowedBy: string | undefined;
  for (const p of policies) {
    if (!applies(p, req.service)) continue;
    if (p.dryRun) {
      switch (p.action) {
        case 'DENY':
          (shadow ??= []).push({ policy: p.name, wouldDeny: policyMatches(p, r) });
          break;
        case 'ALLOW':
          (dryAllows ??= []).push(p.name);
          if (!dryAllowMatched) dryAllowMatched = policyMatches(p, r);
          break;
        case 'AUDIT':
        case 'CUSTOM':
          if (policyMatches(p, r)) (shadow ??= []).push({ policy: p.name, wouldDeny: false });
          break;
      }
      continue;
    }
    switch (p.action) {
      case 'CUSTOM':
        if (policyMatches(p, r)) (custom ??= []).push(p);
        break;
      case 'AUDIT':
        if (policyMatches(p, r)) (audited ??= []).push(p.name);
        break;
      case 'DENY':
        if (deniedBy === undefined && policyMatches(p, r)) deniedBy = p.name;
        break;
      case 'ALLOW':
        allowGoverned = true;
        if (deniedBy === undefined && allowedBy === undefined && policyMatches(p, r)) allowedBy = p.name;
        break;
    }
  }
  if (dryAllows !== undefined) {
    shadow ??= [];
    for (const name of dryAllows) shadow.push({ policy: name, wouldDeny: !dryAllowMatched });
  }
  let allowed: boolean;
  let reason: string;
  if (deniedBy !== undefined) {
    allowed = false;
    reason = deniedBy;
  } else if (!allowGoverned) {
    allowed = true;
    reason = NO_ALLOW_APPLIES;
  } else if (allowedBy === undefined) {
    allowed = false;
    reason = NO_ALLOW_MATCHED;
  } else {
    allowed = true;
    reason = allowedBy;
  }
  return { allowed, reason, custom: custom ?? NONE, audited: audited ?? NONE, shadow: shadow ?? NONE };
}
