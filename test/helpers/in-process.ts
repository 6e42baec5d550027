import { Writable } from 'node:stream';
import { LogControl } from '../../src/lib/log.js';
import { loadZtunnelConfig } from '../../src/ztunnel/config.js';
import { Ztunnel } from '../../src/ztunnel/ztunnel.js';
import { loadIstiodConfig } from '../../src/istiod/config.js';
import { Istiod } from '../../src/istiod/istiod.js';
import type { GrpcLimits } from '../../src/istiod/grpc-server.js';
import { loadApiServerConfig } from '../../src/apiserver/config.js';
import { ApiServer } from '../../src/apiserver/api-server.js';
import { TEST_DEADLINE_MS } from './deadlines.js';

/**
 * A ztunnel in this process (real sockets), with control servers on ephemeral ports, once it is ready (unless
 * `o.waitReady` is false). Its logs are discarded unless `o.logs` takes them. SOCKS5 is on
 * (UNSTABLE_ENABLE_SOCKS5=true; `env` may turn it off): the suite drives traffic through it.
 */
export async function startZtunnel(
  localConfig: string,
  nodeName: string,
  localCa: string | undefined,
  env: Record<string, string> = {},
  o: { waitReady?: boolean; logs?: LogControl } = {},
): Promise<Ztunnel> {
  const cfg = loadZtunnelConfig(
    {
      localConfig,
      localCa,
      adminAddress: '127.0.0.1:0',
      metricsAddress: '127.0.0.1:0',
      readinessAddress: '127.0.0.1:0',
    },
    { NODE_NAME: nodeName, UNSTABLE_ENABLE_SOCKS5: 'true', ...env },
  );
  const zt = await Ztunnel.start(cfg, o.logs ?? jsonLogsTo(undefined, 'ztunnel'));
  if (o.waitReady === false) return zt;
  const deadline = Date.now() + TEST_DEADLINE_MS;
  while (zt.pending().length > 0) {
    if (Date.now() > deadline) throw new Error(`ztunnel ${nodeName} not ready: ${zt.pending().join('; ')}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  return zt;
}

/**
 * An istiod in this process on ephemeral ports, serving `configDir` (or, when it is undefined, the API of
 * `o.kubeconfig`), with its state under `stateDir`; optionally with a plug-in CA (`caDir`), on another loopback
 * `host`, other limits on its gRPC port, its environment `env`, another time to wait for a usable istio-ca-secret,
 * and its JSON log lines (info and up) sent to `log`, or its logs to `logs`.
 */
export async function startIstiod(
  configDir: string | undefined,
  stateDir: string,
  o: {
    caDir?: string;
    host?: string;
    log?: (line: string) => void;
    grpcLimits?: Partial<GrpcLimits>;
    kubeconfig?: string;
    env?: Record<string, string>;
    caSecretTimeoutMs?: number;
    logs?: LogControl;
  } = {},
): Promise<Istiod> {
  const host = o.host ?? '127.0.0.1';
  const loaded = loadIstiodConfig(
    {
      configDir,
      stateDir,
      caDir: o.caDir,
      grpcAddress: `${host}:0`,
      monitoringAddress: `${host}:0`,
      webhookAddress: `${host}:0`,
      apiserverAddress: configDir === undefined ? undefined : `${host}:0`,
      kubeconfig: o.kubeconfig,
    },
    o.env ?? {},
  );
  const cfg = {
    ...loaded,
    grpcLimits: { ...loaded.grpcLimits, ...o.grpcLimits },
    selfSignedCa: { ...loaded.selfSignedCa, loadTimeoutMs: o.caSecretTimeoutMs ?? loaded.selfSignedCa.loadTimeoutMs },
  };
  return Istiod.start(cfg, o.logs ?? jsonLogsTo(o.log, 'istiod'));
}

/** An istiod in this process against the Kubernetes API `kubeconfig` names, on ephemeral ports of `host`, logging to `logs`. */
export async function startIstiodOnApi(
  kubeconfig: string,
  stateDir: string,
  host: string,
  logs: LogControl,
): Promise<Istiod> {
  return Istiod.start(
    loadIstiodConfig(
      { kubeconfig, stateDir, grpcAddress: `${host}:0`, monitoringAddress: `${host}:0`, webhookAddress: `${host}:0` },
      {},
    ),
    logs,
  );
}

/** JSON log lines (info and up) of `component` sent to `log`, or nothing logged when there is no `log`. */
function jsonLogsTo(log: ((line: string) => void) | undefined, component: string): LogControl {
  const out = new Writable({
    write: (c: Buffer, _e, cb) => {
      log?.(c.toString());
      cb();
    },
  });
  return new LogControl({ format: 'json', level: log === undefined ? 'silent' : 'info', component, out });
}

/**
 * An embedded API server in this process (on a kernel-chosen loopback port unless `listen` names one), its data
 * (store, credentials, the admin kubeconfig) in `dataDir`, logs discarded unless `log` takes them.
 */
export async function startApiServer(
  dataDir: string,
  o: { log?: (line: string) => void; listen?: string; eventHistory?: number } = {},
): Promise<ApiServer> {
  const cfg = loadApiServerConfig(
    {
      dataDir,
      listen: o.listen ?? '127.0.0.1:0',
      eventHistory: o.eventHistory === undefined ? undefined : String(o.eventHistory),
    },
    {},
  );
  return ApiServer.start(cfg, jsonLogsTo(o.log, 'apiserver'));
}
