/**
 * The waypoint proxy's configuration, parsed once: what Istio's waypoint template hands `pilot-agent proxy waypoint`
 * (istio `manifests/charts/istio-control/istio-discovery/files/waypoint.yaml`): the pod's name, namespace and IP from
 * the downward API, `CA_ADDR`, `PROXY_CONFIG`'s `discoveryAddress`, `TRUST_DOMAIN`, `ISTIO_META_CLUSTER_ID`, the
 * token and root certificate at Istio's mount paths, and the flags `--domain`, `--serviceCluster`,
 * `--log_output_level`, `--log_as_json`. The proxy runs on ztunnel's parts, so the result holds a ZtunnelConfig for
 * them: xDS and CA at istiod, admin on 127.0.0.1:15000, metrics on 15020 and readiness on 15021 of every IPv4 address.
 */
import { MeshError } from '../lib/errors.js';
import { ameshLogLevel } from '../lib/istio-log-level.js';
import { ISTIOD_GRPC_PORT } from '../lib/istio-ports.js';
import { loadZtunnelConfig, type ZtunnelConfig } from '../ztunnel/config.js';

/** Where Istio's proxy templates mount the istio-ca token and the mesh's root certificate. */
export const PROXY_TOKEN_FILE = '/var/run/secrets/tokens/istio-token';
export const PROXY_ROOT_CERT = '/var/run/secrets/istio/root-cert.pem';
const DEFAULT_DISCOVERY = `istiod.istio-system.svc:${ISTIOD_GRPC_PORT}`;

export interface WaypointFlags {
  readonly domain?: string | undefined;
  readonly serviceCluster?: string | undefined;
  readonly log_output_level?: string | undefined;
  readonly log_as_json?: boolean | undefined;
}

export interface WaypointConfig {
  readonly ztunnel: ZtunnelConfig;
  /** The waypoint pod's Workload uid (`<cluster>//Pod/<namespace>/<name>`). */
  readonly podUid: string;
  /** The pod IP, where HBONE is served on 15008. */
  readonly instanceIp: string;
  /** `namespace/name` of the waypoint's Gateway: the name of its resource from istiod. */
  readonly gateway: string;
}

function required(env: Readonly<Record<string, string | undefined>>, name: string): string {
  const v = env[name];
  if (v === undefined || v === '')
    throw new MeshError(
      'AMESH_ERR_CONFIG',
      `${name} is not set: the waypoint's Deployment sets it (from the downward API); run the proxy from it`,
    );
  return v;
}

/** `PROXY_CONFIG`'s `discoveryAddress` (Istio's ProxyConfig as JSON), if it names one. */
function discoveryAddress(proxyConfig: string | undefined): string | undefined {
  if (proxyConfig === undefined || proxyConfig.trim() === '') return undefined;
  try {
    const v = (JSON.parse(proxyConfig) as { discoveryAddress?: unknown }).discoveryAddress;
    return typeof v === 'string' && v !== '' ? v : undefined;
  } catch (e) {
    throw new MeshError('AMESH_ERR_CONFIG', `PROXY_CONFIG is not JSON: ${(e as Error).message}`);
  }
}

const https = (addr: string): string => (addr.includes('://') ? addr : `https://${addr}`);

export function loadWaypointConfig(
  flags: WaypointFlags,
  env: Readonly<Record<string, string | undefined>> = process.env,
): WaypointConfig {
  const podName = required(env, 'POD_NAME');
  const namespace = required(env, 'POD_NAMESPACE');
  const instanceIp = required(env, 'INSTANCE_IP');
  const clusterId = env['ISTIO_META_CLUSTER_ID'] || env['CLUSTER_ID'] || 'Kubernetes';
  const discovery = discoveryAddress(env['PROXY_CONFIG']) ?? env['CA_ADDR'] ?? DEFAULT_DISCOVERY;
  const ztunnel = loadZtunnelConfig(
    {
      adminAddress: '127.0.0.1:15000',
      metricsAddress: '0.0.0.0:15020',
      readinessAddress: '0.0.0.0:15021',
      logLevel: ameshLogLevel(flags.log_output_level ?? 'default:info'),
    },
    {
      ...env,
      XDS_ADDRESS: https(discovery),
      CA_ADDRESS: https(env['CA_ADDR'] || discovery),
      XDS_ROOT_CA: env['XDS_ROOT_CA'] || PROXY_ROOT_CERT,
      CA_ROOT_CA: env['CA_ROOT_CA'] || PROXY_ROOT_CERT,
      AUTH_TOKEN: env['AUTH_TOKEN'] || PROXY_TOKEN_FILE,
      NODE_NAME: env['ISTIO_META_NODE_NAME'] || env['NODE_NAME'] || '',
      CLUSTER_ID: clusterId,
      LOG_FORMAT: flags.log_as_json === true ? 'json' : (env['LOG_FORMAT'] ?? 'text'),
      UNSTABLE_ENABLE_SOCKS5: 'false',
    },
  );
  // The template names the Deployment after the Gateway (the waypoint class adds no suffix).
  const gateway = `${namespace}/${required(env, 'ISTIO_META_WORKLOAD_NAME')}`;
  return Object.freeze({ ztunnel, podUid: `${clusterId}//Pod/${namespace}/${podName}`, instanceIp, gateway });
}
