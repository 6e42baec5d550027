import { MeshError } from '../lib/errors.js';
import { parseDuration } from '../lib/duration.js';
import { parseListenAddress, type ListenAddress } from '../lib/address.js';
import { LogControl, parseLogFormat, type LogFormat } from '../lib/log.js';
import {
  HBONE_PORT,
  INBOUND_PLAINTEXT_PORT,
  INPOD_MARK,
  ISTIOD_GRPC_PORT,
  OUTBOUND_CAPTURE_PORT,
  SOCKS5_PORT,
  ZTUNNEL_ADMIN_PORT,
  ZTUNNEL_READINESS_PORT,
  ZTUNNEL_STATS_PORT,
} from '../lib/istio-ports.js';
import { parseTrustDomain } from '../lib/spiffe.js';
import { DEFAULT_CLUSTER_ID } from './state/workload.js';
import { DEFAULT_CLUSTER_DOMAIN } from './dns/dns-store.js';
import { ZDS_SOCKET_PATH } from '../zds/zds-socket-path.js';
import { compareStrings } from '../lib/compare-strings.js';

/** ztunnel's default control addresses (ztunnel `src/config.rs`): admin on loopback, metrics and readiness on all. */
export const DEFAULT_ADMIN_ADDRESS = `127.0.0.1:${ZTUNNEL_ADMIN_PORT}`;
export const DEFAULT_METRICS_ADDRESS = `0.0.0.0:${ZTUNNEL_STATS_PORT}`;
export const DEFAULT_READINESS_ADDRESS = `0.0.0.0:${ZTUNNEL_READINESS_PORT}`;
/** Ports ztunnel itself owns: a connection targeting one of them would loop (ztunnel `src/config.rs` `illegal_ports`). */
export const ILLEGAL_PORTS: ReadonlySet<number> = new Set([
  OUTBOUND_CAPTURE_PORT,
  INBOUND_PLAINTEXT_PORT,
  HBONE_PORT,
  SOCKS5_PORT,
]);

/**
 * Time to connect to an upstream app or to a peer's HBONE port before giving up (ztunnel `src/proxy.rs`
 * CONNECTION_TIMEOUT).
 */
export const CONNECT_TIMEOUT_MS = 10_000;

/** ztunnel defaults (ztunnel src/config.rs), each the value Istio ships. */
export const DEFAULTS = Object.freeze({
  /** One HBONE connection carries at most this many streams. */
  poolMaxStreamsPerConnection: 100,
  /** An HBONE connection with no checkout for this long is closed. */
  poolUnusedReleaseTimeout: '5m',
  /** SIGTERM drains connections for at most this long, then closes them. */
  connectionTerminationDeadline: '5s',
  /** Workload certificate lifetime requested from the CA. */
  secretTtl: '24h',
  /** HTTP/2 windows and frame size: large, so one stream can fill a fast link (ztunnel `src/proxy/h2/client.rs`). */
  http2StreamWindowSize: 4 * 1024 * 1024,
  http2ConnectionWindowSize: 16 * 1024 * 1024,
  http2FrameSize: 1024 * 1024,
  /**
   * How long each step of an HBONE connection that waits on the peer may take: the TLS handshake, the peer's
   * SETTINGS ACK, the response to a CONNECT, the peer taking a closing connection's last frames. ztunnel bounds a
   * dial with CONNECTION_TIMEOUT (ztunnel `src/proxy.rs`); amesh gives each later step the same bound, so a peer
   * that stops answering never holds a connection or an app longer.
   */
  hboneConnectTimeoutMs: CONNECT_TIMEOUT_MS,
  /** HBONE connections send PING this often, the first one interval after they open (ztunnel `src/proxy/h2.rs`). */
  hboneKeepaliveIntervalMs: 10_000,
  /** A PING unanswered for this long declares the HBONE connection dead (ztunnel `src/proxy/h2.rs`). */
  hboneKeepaliveTimeoutMs: 20_000,
  /**
   * SOCKS5 capture is off unless UNSTABLE_ENABLE_SOCKS5=true: with it on, a local process can send traffic under
   * the workload's identity, so ztunnel keeps it opt-in (ztunnel src/config.rs).
   */
  enableSocks5: false,
});

/** Listen backlog of every in-pod listener, the proxies' and the DNS proxy's (ztunnel `src/inpod/config.rs`). */
export const INPOD_LISTEN_BACKLOG = 128;

/** In-pod mode (INPOD_ENABLED): the node agent hands ztunnel each pod's network namespace over ZDS. */
export interface InpodConfig {
  readonly uds: string;
  /** SO_MARK on every socket made in a pod (PACKET_MARK). */
  readonly mark: number;
  /** SO_REUSEPORT on in-pod listeners, so a new ztunnel takes over from an old one (INPOD_PORT_REUSE). */
  readonly portReuse: boolean;
}

/** How long inbound/outbound wait for a workload to appear in config before failing (ztunnel `src/proxy/inbound.rs`, `src/proxy/outbound.rs`). */
export const WORKLOAD_WAIT_MS = 5_000;

/** Istio's default file locations for the control plane trust anchor and the istio-ca token (relative, as ztunnel). */
export const DEFAULT_ROOT_CA_FILE = './var/run/secrets/istio/root-cert.pem';
export const DEFAULT_TOKEN_FILE = './var/run/secrets/tokens/istio-token';
/**
 * Where istiod is when XDS_ADDRESS / CA_ADDRESS are unset (ztunnel src/config.rs): its Service name inside a
 * Kubernetes cluster (KUBERNETES_SERVICE_HOST is set in every pod), else localhost.
 */
export const ISTIOD_IN_CLUSTER_ADDRESS = `https://istiod.istio-system.svc:${ISTIOD_GRPC_PORT}`;
export const ISTIOD_LOCAL_ADDRESS = `https://localhost:${ISTIOD_GRPC_PORT}`;
/** Env prefixes ztunnel forwards: gRPC metadata on the xDS stream / CA calls, and xDS node metadata (ztunnel src/config.rs). */
const XDS_HEADER_PREFIX = 'XDS_HEADER_';
const CA_HEADER_PREFIX = 'CA_HEADER_';
const ISTIO_META_PREFIX = 'ISTIO_META_';
const ISTIO_METAJSON_PREFIX = 'ISTIO_METAJSON_';

/** Extra gRPC metadata, `[lowercased key, value]` pairs. */
export type GrpcHeaders = readonly (readonly [string, string])[];
/** A JSON value of xDS node metadata (a google.protobuf.Struct field). */
export type NodeMetadataValue =
  string | number | boolean | null | NodeMetadataValue[] | { [k: string]: NodeMetadataValue };

/** Where certificates come from: istiod's CA, Istio plug-in CA files (`--local-ca`), or a generated root (`FAKE_CA`). */
export type CaSource =
  | { readonly t: 'istiod'; readonly address: string }
  | { readonly t: 'local'; readonly dir: string }
  | { readonly t: 'fake' };

export interface ZtunnelConfig {
  readonly localXdsPath: string | undefined;
  /** The control plane for workloads and policies (delta ADS); undefined in local mode. */
  readonly xdsAddress: string | undefined;
  readonly ca: CaSource;
  /** A PEM file, `SYSTEM` (the OS trust store) or the PEM itself, as ztunnel reads XDS_ROOT_CA / CA_ROOT_CA. */
  readonly xdsRootCa: string;
  readonly caRootCa: string;
  /** XDS_HEADER_* / CA_HEADER_*: extra gRPC metadata on every xDS stream / CA call. */
  readonly xdsHeaders: GrpcHeaders;
  readonly caHeaders: GrpcHeaders;
  /** ISTIO_META_* (strings) and ISTIO_METAJSON_* (parsed JSON): extra xDS node metadata. */
  readonly nodeMetadata: Readonly<Record<string, NodeMetadataValue>>;
  readonly authToken: string;
  readonly altXdsHostname: string | undefined;
  readonly altCaHostname: string | undefined;
  readonly podName: string;
  readonly podNamespace: string;
  readonly instanceIp: string;
  readonly nodeName: string;
  readonly clusterId: string;
  readonly trustDomain: string;
  readonly network: string;
  readonly secretTtlMs: number;
  readonly poolMaxStreamsPerConnection: number;
  readonly poolUnusedReleaseTimeoutMs: number;
  readonly connectionTerminationDeadlineMs: number;
  readonly http2StreamWindowSize: number;
  readonly http2ConnectionWindowSize: number;
  readonly http2FrameSize: number;
  readonly hboneConnectTimeoutMs: number;
  readonly hboneKeepaliveIntervalMs: number;
  readonly hboneKeepaliveTimeoutMs: number;
  readonly enableSocks5: boolean;
  readonly enableResponseBaggage: boolean;
  /** In-pod mode, undefined in local mode (workload IPs are this host's addresses). */
  readonly inpod: InpodConfig | undefined;
  /** IPV6_ENABLED: in-pod listeners bind `[::]` as well as `0.0.0.0` (ztunnel's bind wildcard); DNS answers AAAA. */
  readonly ipv6Enabled: boolean;
  /**
   * The DNS proxy on 15053 in each pod (in-pod mode): on unless the proxy metadata DNS_CAPTURE (ISTIO_META_DNS_CAPTURE)
   * is other than "true" (ztunnel `src/config.rs`; pods still opt in by having their DNS captured).
   */
  readonly dnsProxy: boolean;
  /** CLUSTER_DOMAIN, for the DNS proxy's search domains. */
  readonly clusterDomain: string;
  readonly authzPolicyInfoLogging: boolean;
  readonly logFormat: LogFormat;
  readonly logLevel: string;
  readonly adminAddress: ListenAddress;
  readonly metricsAddress: ListenAddress;
  readonly readinessAddress: ListenAddress;
  /** `--node-metrics`: export prom-client's default Node.js metrics besides ztunnel's own (admin/metrics.ts `processMetrics`). */
  readonly nodeMetrics: boolean;
}

export interface ZtunnelFlags {
  localConfig?: string | undefined;
  localCa?: string | undefined;
  adminAddress?: string | undefined;
  metricsAddress?: string | undefined;
  readinessAddress?: string | undefined;
  logLevel?: string | undefined;
  nodeMetrics?: boolean | undefined;
}

type Env = Readonly<Record<string, string | undefined>>;

function envBool(env: Env, name: string, def: boolean): boolean {
  const v = env[name];
  if (v === undefined || v === '') return def;
  if (/^(true|1|yes)$/i.test(v)) return true;
  if (/^(false|0|no)$/i.test(v)) return false;
  throw new MeshError('AMESH_ERR_CONFIG', `${name}: "${v}" is not a boolean (use true or false)`);
}

function envInt(env: Env, name: string, def: number, min: number, max: number): number {
  const v = env[name];
  if (v === undefined || v === '') return def;
  const n = Number(v);
  if (!Number.isInteger(n) || n < min || n > max)
    throw new MeshError('AMESH_ERR_CONFIG', `${name}: "${v}" must be an integer in ${min}..${max}`);
  return n;
}

/**
 * CONNECTION_TERMINATION_DEADLINE, else derived from TERMINATION_GRACE_PERIOD_SECONDS as ztunnel does:
 * grace-5s when the grace period is over 10s, else grace-1s, at least 1s.
 */
function terminationDeadline(env: Env): number {
  const explicit = env['CONNECTION_TERMINATION_DEADLINE'];
  if (explicit !== undefined && explicit !== '') return parseDuration(explicit, 'CONNECTION_TERMINATION_DEADLINE');
  const grace = env['TERMINATION_GRACE_PERIOD_SECONDS'];
  if (grace !== undefined && grace !== '') {
    const g = envInt(env, 'TERMINATION_GRACE_PERIOD_SECONDS', 0, 0, 86400);
    return Math.max(1, g > 10 ? g - 5 : g - 1) * 1000;
  }
  return parseDuration(DEFAULTS.connectionTerminationDeadline, 'default');
}

/**
 * PROXY_MODE, as ztunnel reads it: "shared" (the default, one ztunnel per node) or "dedicated" (a ztunnel for one
 * workload, named by PROXY_WORKLOAD_INFO). amesh runs shared only, so "dedicated" is refused rather than ignored.
 */
function checkProxyMode(env: Env): void {
  const mode = env['PROXY_MODE'];
  if (mode === undefined || mode === '' || mode === 'shared') return;
  if (mode === 'dedicated')
    throw new MeshError(
      'AMESH_ERR_CONFIG',
      'PROXY_MODE=dedicated is not supported yet: run ztunnel in shared mode (unset PROXY_MODE)',
    );
  throw new MeshError('AMESH_ERR_CONFIG', `PROXY_MODE: "${mode}" must be one of dedicated, shared`);
}

/** INPOD_ENABLED and its settings, named as ztunnel names them (ztunnel `src/config.rs`). */
function inpodConfig(env: Env): InpodConfig | undefined {
  if (!envBool(env, 'INPOD_ENABLED', false)) return undefined;
  const mark = envInt(env, 'PACKET_MARK', INPOD_MARK, 1, 2 ** 32 - 1);
  return Object.freeze({
    uds: nonEmpty(env['INPOD_UDS']) ?? ZDS_SOCKET_PATH,
    mark,
    portReuse: envBool(env, 'INPOD_PORT_REUSE', true),
  });
}

function dnsProxyEnabled(env: Env): boolean {
  const v = env[`${ISTIO_META_PREFIX}DNS_CAPTURE`];
  return v === undefined || v.toLowerCase() === 'true';
}

const nonEmpty = (v: string | undefined): string | undefined => (v === undefined || v === '' ? undefined : v);
const withScheme = (a: string): string => (a.includes('://') ? a : `https://${a}`);

/** Orders `[name, value]` pairs by name, the same in every locale and with no ICU collator (compareStrings). */
const byName = ([a]: readonly [string, unknown], [b]: readonly [string, unknown]): number => compareStrings(a, b);

/** XDS_HEADER_* / CA_HEADER_*: the rest of the name is the metadata key (lowercased, as gRPC sends it). */
function grpcHeaders(env: Env, prefix: string): GrpcHeaders {
  const out: [string, string][] = [];
  for (const [name, value] of Object.entries(env)) {
    if (!name.startsWith(prefix) || value === undefined) continue;
    const key = name.slice(prefix.length).toLowerCase();
    if (!/^[0-9a-z_.-]+$/.test(key) || key.endsWith('-bin'))
      throw new MeshError(
        'AMESH_ERR_CONFIG',
        `${name}: "${key}" is not an ASCII gRPC metadata key (letters, digits, "_", "-", "."; no "-bin" suffix)`,
      );
    if (!/^[\x20-\x7e]*$/.test(value))
      throw new MeshError('AMESH_ERR_CONFIG', `${name}: the value must be printable ASCII`);
    out.push([key, value]);
  }
  return out.sort(byName);
}

/**
 * ISTIO_META_<K>=v gives node metadata K="v"; ISTIO_METAJSON_<K>=json gives K=<parsed json> (ztunnel src/xds/client.rs),
 * and wins over ISTIO_META_<K>. Keys in name order.
 */
function nodeMetadata(env: Env): Record<string, NodeMetadataValue> {
  const out: Record<string, NodeMetadataValue> = {};
  const vars = Object.entries(env).sort(byName);
  for (const [name, value] of vars) {
    if (value !== undefined && name.startsWith(ISTIO_META_PREFIX)) out[name.slice(ISTIO_META_PREFIX.length)] = value;
  }
  for (const [name, value] of vars) {
    if (value === undefined || !name.startsWith(ISTIO_METAJSON_PREFIX)) continue;
    try {
      out[name.slice(ISTIO_METAJSON_PREFIX.length)] = JSON.parse(value) as NodeMetadataValue;
    } catch (e) {
      throw new MeshError('AMESH_ERR_CONFIG', `${name}: not JSON (${(e as Error).message})`);
    }
  }
  return out;
}

/**
 * The config sources, as ztunnel combines them: XDS_ADDRESS and CA_ADDRESS each default to istiod
 * (ISTIOD_IN_CLUSTER_ADDRESS or ISTIOD_LOCAL_ADDRESS), independently. Two differences keep local mode one step:
 * LOCAL_XDS_PATH (or --local-config) without XDS_ADDRESS means no xDS client, as ztunnel's `XDS_ADDRESS=""` does (amesh
 * applies one source, not a merge of both); and `--local-ca DIR` takes the CA's place as `FAKE_CA=true` does.
 */
function sources(
  flags: ZtunnelFlags,
  env: Env,
): { localXdsPath: string | undefined; xdsAddress: string | undefined; ca: CaSource } {
  const localXdsPath = nonEmpty(flags.localConfig ?? env['LOCAL_XDS_PATH']);
  const istiod = env['KUBERNETES_SERVICE_HOST'] === undefined ? ISTIOD_LOCAL_ADDRESS : ISTIOD_IN_CLUSTER_ADDRESS;
  const xdsEnv = env['XDS_ADDRESS'];
  if (localXdsPath !== undefined && nonEmpty(xdsEnv) !== undefined)
    throw new MeshError('AMESH_ERR_CONFIG', 'set either XDS_ADDRESS or LOCAL_XDS_PATH, not both');
  let xdsAddress: string | undefined;
  if (localXdsPath === undefined) xdsAddress = xdsEnv === undefined ? istiod : nonEmpty(xdsEnv);
  if (localXdsPath === undefined && xdsAddress === undefined) {
    throw new MeshError(
      'AMESH_ERR_CONFIG',
      'no configuration source: XDS_ADDRESS is empty; set it (istiod, e.g. https://localhost:15012) or LOCAL_XDS_PATH / --local-config FILE',
    );
  }
  const caEnv = env['CA_ADDRESS'];
  const fakeCa = envBool(env, 'FAKE_CA', false);
  if (flags.localCa !== undefined && (fakeCa || nonEmpty(caEnv) !== undefined))
    throw new MeshError(
      'AMESH_ERR_CONFIG',
      '--local-ca replaces the CA: unset CA_ADDRESS and FAKE_CA, or drop --local-ca',
    );
  let ca: CaSource;
  if (flags.localCa !== undefined) ca = { t: 'local', dir: flags.localCa };
  else if (fakeCa) ca = { t: 'fake' };
  else if (caEnv === '')
    throw new MeshError(
      'AMESH_ERR_CONFIG',
      'CA_ADDRESS is empty: set it to istiod (e.g. https://localhost:15012), or use --local-ca DIR or FAKE_CA=true',
    );
  else ca = { t: 'istiod', address: withScheme(caEnv ?? istiod) };
  return { localXdsPath, xdsAddress: xdsAddress === undefined ? undefined : withScheme(xdsAddress), ca };
}

/** Builds the frozen ztunnel config from Istio's env names and the CLI flags (flags win). */
export function loadZtunnelConfig(flags: ZtunnelFlags, env: Env = process.env): ZtunnelConfig {
  const { localXdsPath, xdsAddress, ca } = sources(flags, env);
  const nodeName = env['NODE_NAME'] ?? '';
  if (nodeName === '')
    throw new MeshError(
      'AMESH_ERR_CONFIG',
      'NODE_NAME is not set: ztunnel proxies the workloads whose "node" equals it',
    );
  checkProxyMode(env);
  const logFormat = parseLogFormat(env);
  const logLevel = flags.logLevel ?? nonEmpty(env['RUST_LOG']) ?? nonEmpty(env['LOG_LEVEL']) ?? 'info';
  // Validate now, so a bad level fails at start and not at the first /logging call.
  LogControl.parseSpec(logLevel);
  const cfg: ZtunnelConfig = {
    localXdsPath,
    xdsAddress,
    ca,
    xdsRootCa: nonEmpty(env['XDS_ROOT_CA']) ?? DEFAULT_ROOT_CA_FILE,
    caRootCa: nonEmpty(env['CA_ROOT_CA']) ?? DEFAULT_ROOT_CA_FILE,
    xdsHeaders: grpcHeaders(env, XDS_HEADER_PREFIX),
    caHeaders: grpcHeaders(env, CA_HEADER_PREFIX),
    nodeMetadata: nodeMetadata(env),
    authToken: env['AUTH_TOKEN'] ?? DEFAULT_TOKEN_FILE,
    altXdsHostname: env['ALT_XDS_HOSTNAME'],
    altCaHostname: env['ALT_CA_HOSTNAME'],
    podName: env['POD_NAME'] ?? '',
    podNamespace: env['POD_NAMESPACE'] ?? '',
    instanceIp: env['INSTANCE_IP'] ?? '',
    nodeName,
    clusterId: env['ISTIO_META_CLUSTER_ID'] ?? env['CLUSTER_ID'] ?? DEFAULT_CLUSTER_ID,
    trustDomain: parseTrustDomain(env['TRUST_DOMAIN']),
    network: env['NETWORK'] ?? '',
    secretTtlMs: parseDuration(env['SECRET_TTL'] ?? DEFAULTS.secretTtl, 'SECRET_TTL'),
    poolMaxStreamsPerConnection: envInt(
      env,
      'POOL_MAX_STREAMS_PER_CONNECTION',
      DEFAULTS.poolMaxStreamsPerConnection,
      1,
      10_000,
    ),
    poolUnusedReleaseTimeoutMs: parseDuration(
      env['POOL_UNUSED_RELEASE_TIMEOUT'] ?? DEFAULTS.poolUnusedReleaseTimeout,
      'POOL_UNUSED_RELEASE_TIMEOUT',
    ),
    connectionTerminationDeadlineMs: terminationDeadline(env),
    http2StreamWindowSize: envInt(env, 'HTTP2_STREAM_WINDOW_SIZE', DEFAULTS.http2StreamWindowSize, 65_535, 2 ** 31 - 1),
    http2ConnectionWindowSize: envInt(
      env,
      'HTTP2_CONNECTION_WINDOW_SIZE',
      DEFAULTS.http2ConnectionWindowSize,
      65_535,
      2 ** 31 - 1,
    ),
    http2FrameSize: envInt(env, 'HTTP2_FRAME_SIZE', DEFAULTS.http2FrameSize, 16_384, 16_777_215),
    hboneConnectTimeoutMs: DEFAULTS.hboneConnectTimeoutMs,
    hboneKeepaliveIntervalMs: DEFAULTS.hboneKeepaliveIntervalMs,
    hboneKeepaliveTimeoutMs: DEFAULTS.hboneKeepaliveTimeoutMs,
    enableSocks5: envBool(env, 'UNSTABLE_ENABLE_SOCKS5', DEFAULTS.enableSocks5),
    enableResponseBaggage: envBool(env, 'ENABLE_RESPONSE_BAGGAGE', true),
    inpod: inpodConfig(env),
    ipv6Enabled: envBool(env, 'IPV6_ENABLED', true),
    dnsProxy: dnsProxyEnabled(env),
    clusterDomain: nonEmpty(env['CLUSTER_DOMAIN']) ?? DEFAULT_CLUSTER_DOMAIN,
    authzPolicyInfoLogging: envBool(env, 'AUTHZ_POLICY_INFO_LOGGING', false),
    logFormat,
    logLevel,
    adminAddress: parseListenAddress(flags.adminAddress ?? DEFAULT_ADMIN_ADDRESS, '--admin-address'),
    metricsAddress: parseListenAddress(flags.metricsAddress ?? DEFAULT_METRICS_ADDRESS, '--metrics-address'),
    readinessAddress: parseListenAddress(flags.readinessAddress ?? DEFAULT_READINESS_ADDRESS, '--readiness-address'),
    nodeMetrics: flags.nodeMetrics === true,
  };
  if (cfg.secretTtlMs < 1000) throw new MeshError('AMESH_ERR_CONFIG', 'SECRET_TTL must be at least 1s');
  return Object.freeze(cfg);
}
