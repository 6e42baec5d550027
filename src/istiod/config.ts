import path from 'node:path';
import { MeshError } from '../lib/errors.js';
import { parseDuration } from '../lib/duration.js';
import { parseListenAddress, type ListenAddress } from '../lib/address.js';
import { ISTIOD_GRPC_PORT, ISTIOD_MONITORING_PORT, ISTIOD_WEBHOOK_PORT } from '../lib/istio-ports.js';
import { LogControl, parseLogFormat, type LogFormat } from '../lib/log.js';
import { parseTrustDomain } from '../lib/spiffe.js';
import { parseJwtRules, type JwtRule } from './ca/authenticate.js';
import type { KubeConfig } from '@kubernetes/client-node';
import { loadKubeConfig } from '../kube/kube-config.js';
import type { GrpcLimits } from './grpc-server.js';
import { envGoBool } from '../lib/go-bool.js';
import { parseAllocationPrefix, type AllocationPrefix } from './prefix-allocator.js';

/** Limits on istiod's gRPC port, where callers are not yet authenticated. */
const GRPC_LIMIT_DEFAULTS: GrpcLimits = Object.freeze({
  /** Room for two connections (xDS, CA) from each of 1000 ztunnels; more are closed at accept. */
  maxConnections: 2048,
  /**
   * One node's ztunnel holds an xDS connection and a CA connection (each of its gRPC clients pools one HTTP/2
   * connection, ztunnel src/tls/control.rs), briefly one per concurrent CSR (MAX_CONCURRENT_CSRS, 8) while the
   * first is set up, and twice that while it restarts; 64 leaves room for that several times over (agents sharing
   * the node's IP), while no single source can hold more than 1/32 of maxConnections.
   */
  maxConnectionsPerSource: 64,
  /** A flood of refused connections costs one log line per 10 s (with how many, from whom), not one per connection. */
  refusedLogIntervalMs: 10_000,
  /** A ClientHello and the client's Finished take a round trip or two; Node's default would hold a silent socket 120 s. */
  handshakeTimeoutMs: 10_000,
  /** Nothing legitimate holds a connection with no call: ztunnel keeps its xDS stream open and reconnects for CSRs. */
  idleTimeoutMs: 30_000,
  /**
   * Istio's ISTIO_GPRC_MAXRECVMSGSIZE default (pilot/pkg/features/tuning.go). ztunnel's largest request, a reconnect
   * listing the resources it holds, is about 100 bytes a resource, so this covers some forty thousand; requests are
   * authenticated on their metadata before any of it is read.
   */
  maxReceiveMessageBytes: 4 * 1024 * 1024,
  /** Istio's GRPC_KEEPALIVE_INTERVAL and GRPC_KEEPALIVE_TIMEOUT defaults (pkg/keepalive/options.go). */
  keepaliveTimeMs: 30_000,
  keepaliveTimeoutMs: 10_000,
});

/** istio_ca.go createSelfSignedCACertificateOptions: "Abort after 20 minutes". */
const SELF_SIGNED_CA_LOAD_TIMEOUT_MS = 20 * 60_000;

/** istiod's defaults, each Istio's own (istio `pilot/pkg/features/`, `security/pkg/server/ca/server.go`). */
export const ISTIOD_DEFAULTS = Object.freeze({
  grpcAddress: `0.0.0.0:${ISTIOD_GRPC_PORT}`,
  monitoringAddress: `0.0.0.0:${ISTIOD_MONITORING_PORT}`,
  webhookAddress: `0.0.0.0:${ISTIOD_WEBHOOK_PORT}`,
  /** REVISION: the control plane's revision, whose `istio.io/rev` webhook configurations it keeps. */
  revision: 'default',
  /** With --config-dir: the embedded API server, on amesh apiserver's (and kube-apiserver's) secure port, loopback only. */
  apiserverAddress: '127.0.0.1:6443',
  /** Where the token issuer key, the published root and (without Kubernetes) the generated CA live. */
  stateDir: '.amesh/istiod',
  /** ROOT_CA_DIR (pilot/pkg/bootstrap/istio_ca.go): the plug-in CA, where the chart mounts the `cacerts` Secret. */
  pluggedCaDir: './etc/cacerts',
  /** POD_NAMESPACE (pilot/pkg/bootstrap/options.go): where istio-ca-secret lives. */
  podNamespace: 'istio-system',
  /** CITADEL_SELF_SIGNED_CA_CERT_TTL (security/pkg/cmd/constants.go DefaultSelfSignedCACertTTL: 3650 days). */
  selfSignedCaCertTtl: '87600h',
  tokenAudiences: 'istio-ca',
  trustedNodeAccounts: 'istio-system/ztunnel',
  workloadCertTtl: '24h',
  maxWorkloadCertTtl: '2160h',
  rootNamespace: 'istio-system',
  /** PILOT_ENABLE_IP_AUTOALLOCATE and its prefixes (pilot/pkg/features/pilot.go). */
  ipAutoallocate: true,
  ipAutoallocateIpv4Prefix: '240.240.0.0/16',
  ipAutoallocateIpv6Prefix: '2001:2::/48',
});

/**
 * DNS names on istiod's serving certificate: its Service in its namespace (`istiod.<POD_NAMESPACE>.svc`, and
 * `istiod-<revision>` for a revision other than default, as pilot/pkg/bootstrap/server.go names them), which ztunnel
 * and the API server's webhook calls verify, and the names a local client uses.
 */
export function istiodServingNames(c: Pick<IstiodConfig, 'podNamespace' | 'revision'>): string[] {
  const services = c.revision === ISTIOD_DEFAULTS.revision ? ['istiod'] : ['istiod', `istiod-${c.revision}`];
  return [
    ...services.flatMap((svc) => [`${svc}.${c.podNamespace}.svc`, `${svc}.${c.podNamespace}.svc.cluster.local`]),
    'istiod',
    'localhost',
  ];
}

export interface IstiodConfig {
  readonly configDir: string | undefined;
  /** The plug-in CA directory: `--ca-dir` (then it must hold one), else ROOT_CA_DIR. */
  readonly pluggedCa: { readonly dir: string; readonly required: boolean };
  /** The self-signed CA kept in istio-ca-secret on Kubernetes. */
  readonly selfSignedCa: {
    readonly rootTtlMs: number;
    /** How long istiod retries reading or creating the Secret before it gives up (Istio: 20 minutes). */
    readonly loadTimeoutMs: number;
  };
  /** istiod's own namespace, where istio-ca-secret lives. */
  readonly podNamespace: string;
  readonly stateDir: string;
  readonly trustDomain: string;
  readonly clusterId: string;
  readonly rootNamespace: string;
  readonly domainSuffix: string;
  readonly grpcAddress: ListenAddress;
  readonly monitoringAddress: ListenAddress;
  /** The HTTPS webhook port (`/validate`). */
  readonly webhookAddress: ListenAddress;
  /** REVISION: which ValidatingWebhookConfigurations (`istio.io/rev`) istiod keeps current. */
  readonly revision: string;
  /** Where the embedded API server listens when `configDir` is set. */
  readonly apiserverAddress: ListenAddress;
  readonly tokenAudiences: readonly string[];
  readonly trustedNodeAccounts: readonly string[];
  readonly jwtRules: readonly JwtRule[];
  readonly defaultCertTtlMs: number;
  readonly maxCertTtlMs: number;
  readonly grpcLimits: GrpcLimits;
  readonly logFormat: LogFormat;
  readonly logLevel: string;
  /**
   * Where ServiceEntries without addresses get theirs (`PILOT_IP_AUTOALLOCATE_IPV4_PREFIX`, `..._IPV6_PREFIX`);
   * undefined when `PILOT_ENABLE_IP_AUTOALLOCATE` is false, which also leaves any allocated ones unserved.
   */
  readonly ipAutoallocate: { readonly ipv4: AllocationPrefix; readonly ipv6: AllocationPrefix } | undefined;
  /** The Kubernetes API istiod's informers watch: set unless `--config-dir` is given. */
  readonly kube: KubeConfig | undefined;
}

export interface IstiodFlags {
  configDir?: string | undefined;
  kubeconfig?: string | undefined;
  caDir?: string | undefined;
  stateDir?: string | undefined;
  grpcAddress?: string | undefined;
  monitoringAddress?: string | undefined;
  webhookAddress?: string | undefined;
  apiserverAddress?: string | undefined;
  logLevel?: string | undefined;
}

function positiveInt(env: Readonly<Record<string, string | undefined>>, name: string, dflt: number): number {
  const v = env[name];
  if (v === undefined || v === '') return dflt;
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n < 1)
    throw new MeshError('AMESH_ERR_CONFIG', `${name}: "${v}" is not a positive whole number of bytes`);
  return n;
}

function positiveDuration(env: Readonly<Record<string, string | undefined>>, name: string, dflt: string): number {
  const ms = parseDuration(env[name] || dflt, name);
  if (ms <= 0) throw new MeshError('AMESH_ERR_CONFIG', `${name}: "${env[name] ?? ''}" must be longer than 0`);
  return ms;
}

/** The allocation prefixes, checked only when allocation is on, as istiod checks them (pilot/pkg/bootstrap/server.go). */
function ipAutoallocate(env: Readonly<Record<string, string | undefined>>): IstiodConfig['ipAutoallocate'] {
  if (!envGoBool(env, 'PILOT_ENABLE_IP_AUTOALLOCATE', ISTIOD_DEFAULTS.ipAutoallocate)) return undefined;
  const prefix = (name: string, dflt: string, family: 4 | 6): AllocationPrefix =>
    parseAllocationPrefix(env[name] || dflt, family, name);
  return Object.freeze({
    ipv4: prefix('PILOT_IP_AUTOALLOCATE_IPV4_PREFIX', ISTIOD_DEFAULTS.ipAutoallocateIpv4Prefix, 4),
    ipv6: prefix('PILOT_IP_AUTOALLOCATE_IPV6_PREFIX', ISTIOD_DEFAULTS.ipAutoallocateIpv6Prefix, 6),
  });
}

const list = (s: string): string[] =>
  s
    .split(',')
    .map((x) => x.trim())
    .filter((x) => x !== '');

export function loadIstiodConfig(
  flags: IstiodFlags,
  env: Readonly<Record<string, string | undefined>> = process.env,
): IstiodConfig {
  const logFormat = parseLogFormat(env);
  const logLevel = flags.logLevel ?? env['LOG_LEVEL'] ?? 'info';
  LogControl.parseSpec(logLevel);
  const trusted = list(env['CA_TRUSTED_NODE_ACCOUNTS'] ?? ISTIOD_DEFAULTS.trustedNodeAccounts);
  for (const t of trusted)
    if (!/^[^/]+\/[^/]+$/.test(t))
      throw new MeshError('AMESH_ERR_CONFIG', `CA_TRUSTED_NODE_ACCOUNTS: "${t}" is not <namespace>/<serviceaccount>`);
  if (flags.apiserverAddress !== undefined && flags.configDir === undefined) {
    throw new MeshError(
      'AMESH_ERR_CONFIG',
      '--apiserver-address is where the embedded API server for --config-dir listens; without --config-dir istiod uses the API its kubeconfig names',
    );
  }
  if (flags.kubeconfig !== undefined && flags.configDir !== undefined) {
    throw new MeshError(
      'AMESH_ERR_CONFIG',
      '--kubeconfig and --config-dir both name where the mesh is described; give one (--config-dir for a manifest directory, --kubeconfig for a Kubernetes API)',
    );
  }
  const cfg: IstiodConfig = {
    configDir: flags.configDir === undefined ? undefined : path.resolve(flags.configDir),
    pluggedCa: Object.freeze({
      dir: path.resolve(flags.caDir ?? (env['ROOT_CA_DIR'] || ISTIOD_DEFAULTS.pluggedCaDir)),
      required: flags.caDir !== undefined,
    }),
    selfSignedCa: Object.freeze({
      rootTtlMs: positiveDuration(env, 'CITADEL_SELF_SIGNED_CA_CERT_TTL', ISTIOD_DEFAULTS.selfSignedCaCertTtl),
      loadTimeoutMs: SELF_SIGNED_CA_LOAD_TIMEOUT_MS,
    }),
    podNamespace: env['POD_NAMESPACE'] || ISTIOD_DEFAULTS.podNamespace,
    stateDir: path.resolve(flags.stateDir ?? ISTIOD_DEFAULTS.stateDir),
    trustDomain: parseTrustDomain(env['TRUST_DOMAIN']),
    clusterId: env['CLUSTER_ID'] ?? 'Kubernetes',
    rootNamespace: env['ROOT_NAMESPACE'] ?? ISTIOD_DEFAULTS.rootNamespace,
    domainSuffix: env['CLUSTER_DOMAIN'] ?? 'cluster.local',
    grpcAddress: parseListenAddress(flags.grpcAddress ?? ISTIOD_DEFAULTS.grpcAddress, '--grpc-address'),
    monitoringAddress: parseListenAddress(
      flags.monitoringAddress ?? ISTIOD_DEFAULTS.monitoringAddress,
      '--monitoring-address',
    ),
    webhookAddress: parseListenAddress(flags.webhookAddress ?? ISTIOD_DEFAULTS.webhookAddress, '--webhook-address'),
    revision: env['REVISION'] || ISTIOD_DEFAULTS.revision,
    apiserverAddress: parseListenAddress(
      flags.apiserverAddress ?? ISTIOD_DEFAULTS.apiserverAddress,
      '--apiserver-address',
    ),
    tokenAudiences: list(env['TOKEN_AUDIENCES'] ?? ISTIOD_DEFAULTS.tokenAudiences),
    trustedNodeAccounts: trusted,
    jwtRules: parseJwtRules(env['JWT_RULE']),
    defaultCertTtlMs: parseDuration(
      env['DEFAULT_WORKLOAD_CERT_TTL'] ?? ISTIOD_DEFAULTS.workloadCertTtl,
      'DEFAULT_WORKLOAD_CERT_TTL',
    ),
    maxCertTtlMs: parseDuration(
      env['MAX_WORKLOAD_CERT_TTL'] ?? ISTIOD_DEFAULTS.maxWorkloadCertTtl,
      'MAX_WORKLOAD_CERT_TTL',
    ),
    grpcLimits: Object.freeze({
      ...GRPC_LIMIT_DEFAULTS,
      maxReceiveMessageBytes: positiveInt(env, 'ISTIO_GPRC_MAXRECVMSGSIZE', GRPC_LIMIT_DEFAULTS.maxReceiveMessageBytes),
      keepaliveTimeMs:
        env['GRPC_KEEPALIVE_INTERVAL'] === undefined
          ? GRPC_LIMIT_DEFAULTS.keepaliveTimeMs
          : parseDuration(env['GRPC_KEEPALIVE_INTERVAL'], 'GRPC_KEEPALIVE_INTERVAL'),
      keepaliveTimeoutMs:
        env['GRPC_KEEPALIVE_TIMEOUT'] === undefined
          ? GRPC_LIMIT_DEFAULTS.keepaliveTimeoutMs
          : parseDuration(env['GRPC_KEEPALIVE_TIMEOUT'], 'GRPC_KEEPALIVE_TIMEOUT'),
    }),
    logFormat,
    logLevel,
    ipAutoallocate: ipAutoallocate(env),
    kube: flags.configDir === undefined ? loadKubeConfig(flags.kubeconfig, env) : undefined,
  };
  return Object.freeze(cfg);
}
