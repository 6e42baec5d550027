/**
 * The one error catalogue. Every error amesh raises on purpose carries a stable `code` from this list;
 * `docs/errors.md` documents each code with what to do about it. Tests assert on codes, never on prose.
 */
export const ERROR_CODES = [
  'AMESH_ERR_CONFIG',
  'ZT_ERR_LOCAL_CONFIG_INVALID',
  'ZT_ERR_CA_FILES',
  'ZT_ERR_CERT_UNAVAILABLE',
  'ZT_ERR_BIND',
  'ZT_ERR_POLICY_DENIED',
  'ZT_ERR_IDENTITY_MISMATCH',
  'ZT_ERR_TRUST_DOMAIN_MISMATCH',
  'ZT_ERR_NO_CLIENT_CERT',
  'ZT_ERR_UNKNOWN_SOURCE_WORKLOAD',
  'ZT_ERR_UNKNOWN_WORKLOAD',
  'ZT_ERR_NO_HEALTHY_UPSTREAM',
  'ZT_ERR_UNKNOWN_WAYPOINT',
  'ZT_ERR_GATEWAY_NO_CERTIFICATE',
  'ZT_ERR_SERVICE_PORT',
  'ZT_ERR_SELF_CALL',
  'ZT_ERR_HBONE_BAD_REQUEST',
  'ZT_ERR_HBONE_IP_MISMATCH',
  'ZT_ERR_HBONE_STATUS',
  'ZT_ERR_HBONE_CONNECT_TIMEOUT',
  'ZT_ERR_HBONE_HANDSHAKE',
  'ZT_ERR_HBONE_STREAM',
  'ZT_ERR_UPSTREAM_CONNECT',
  'ZT_ERR_SOCKS5_PROTOCOL',
  'ZT_ERR_SHUTTING_DOWN',
  'ISTIOD_ERR_STATE',
  'ISTIOD_ERR_AUTHENTICATION',
  'ISTIOD_ERR_IMPERSONATION',
  'ISTIOD_ERR_CSR',
  'ISTIOD_ERR_MANIFEST',
  'AMESH_ERR_CA_EXISTS',
  'ZT_ERR_SOCKS5_FOREIGN_CLIENT',
  'ZT_ERR_HBONE_CONNECTION_LOST',
  'APISERVER_ERR_DATA_DIR',
  'APISERVER_ERR_AUTHENTICATION',
  'ISTIOD_ERR_KUBE_API',
  'ISTIOD_ERR_CA_SECRET',
  'UP_ERR_CNI',
  'AMESH_ERR_NATIVE',
  'AMESH_ERR_NETNS',
  'CNI_ERR_ENV',
  'CNI_ERR_STDIN',
  'CNI_ERR_DECODE',
  'CNI_ERR_VERSION',
  'CNI_ERR_CONFIG',
  'CNI_ERR_NETNS',
  'CNI_ERR_KUBE_API',
  'CNI_ERR_AGENT_UNAVAILABLE',
  'CNI_ERR_CAPTURE_FAILED',
  'ZT_ERR_DNS_UPSTREAM',
  'ZT_ERR_DNS_BAD_QUERY',
  'ZT_ERR_DNS_RESOLV_CONF',
  'CLUSTER_DNS_ERR_BIND',
  'CLUSTER_DNS_ERR_BAD_QUERY',
  'CLUSTER_DNS_ERR_UPSTREAM',
  'AGENT_ERR_POD_RULES',
  'AGENT_ERR_POD_ANNOTATION',
  'AGENT_ERR_HOST_RULES',
  'AGENT_ERR_POD_NETNS',
  'ZDS_ERR_DECODE',
  'ZDS_ERR_PROTOCOL',
  'ZDS_ERR_PROXY_START',
  'ZDS_ERR_NACK',
  'ZDS_ERR_TIMEOUT',
  'ZDS_ERR_NO_ZTUNNEL',
  'ZDS_ERR_LISTEN',
  'AGENT_ERR_BAD_EVENT',
  'AGENT_ERR_POD_NOT_FOUND',
  'AGENT_ERR_NOT_ELIGIBLE',
  'AGENT_ERR_ZTUNNEL',
  'AGENT_ERR_KUBE_API',
  'AGENT_ERR_RUN_DIR',
  'AGENT_ERR_CNI_INSTALL',
  'AGENT_ERR_CNI_CONFIG',
  'ZT_ERR_POD_STOPPED',
  'ZDS_ERR_NO_NODE_AGENT',
  'UP_ERR_NETWORK',
  'UP_ERR_LEFTOVERS',
  'UP_ERR_NOT_FOUND',
  'UP_ERR_MANIFESTS',
  'UP_ERR_APISERVER',
  'UP_ERR_KUBELET',
  'UP_ERR_CONTAINER',
  'UP_ERR_VOLUME',
  'UP_ERR_SYSCTL',
  'DEMO_ERR_STEP',
  'UP_ERR_HOST_TOOL',
  'UP_ERR_RUNNING',
  'UP_ERR_NOT_ROOT',
  'H2_ERR_COMPRESSION',
  'H2_ERR_PROTOCOL',
  'H2_ERR_FLOW_CONTROL',
  'H2_ERR_FRAME_SIZE',
  'H2_ERR_STREAM_CLOSED',
  'H2_ERR_REFUSED_STREAM',
  'H2_ERR_PEER_RESET',
  'H2_ERR_SESSION_CLOSED',
  'H2_ERR_SETTINGS_TIMEOUT',
  'INSTALL_ERR_SET',
  'INSTALL_ERR_FILE',
  'INSTALL_ERR_VALUES',
  'INSTALL_ERR_UNREACHABLE',
  'INSTALL_ERR_APPLY',
  'INSTALL_ERR_NOT_READY',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

export class MeshError extends Error {
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = 'MeshError';
  }
}

export function isMeshError(e: unknown, code?: ErrorCode): e is MeshError {
  return e instanceof MeshError && (code === undefined || e.code === code);
}

/** Best-effort one-line description of anything thrown, for logs and error replies. */
export function describeError(e: unknown): string {
  if (e instanceof MeshError) return `${e.code}: ${e.message}`;
  if (e instanceof Error) {
    const code = (e as NodeJS.ErrnoException).code;
    return code !== undefined && !e.message.includes(code) ? `${code}: ${e.message}` : e.message;
  }
  return String(e);
}
