import path from 'node:path';
import { MeshError } from '../lib/errors.js';
import { parseListenAddress, type ListenAddress } from '../lib/address.js';
import { LogControl, parseLogFormat, type LogFormat } from '../lib/log.js';
import { parseCidr } from '../lib/ip.js';

/** `amesh apiserver` defaults. */
export const APISERVER_DEFAULTS = Object.freeze({
  /** kube-apiserver's secure port, on loopback: the embedded server is for this machine. */
  listen: '127.0.0.1:6443',
  /** kube-apiserver's default --service-cluster-ip-range. */
  serviceCidr: '10.96.0.0/16',
  dataDir: '.amesh/apiserver',
  /**
   * Events kept for watches to resume from, like etcd's history before compaction: a client further behind
   * gets 410 Expired and relists. Ten thousand covers minutes of a busy single-machine cluster.
   */
  eventHistory: 10_000,
});

export interface ApiServerConfig {
  readonly dataDir: string;
  readonly listen: ListenAddress;
  readonly serviceCidr: string;
  readonly eventHistory: number;
  readonly logLevel: string;
  readonly logFormat: LogFormat;
}

export interface ApiServerFlags {
  dataDir?: string | undefined;
  listen?: string | undefined;
  serviceCidr?: string | undefined;
  eventHistory?: string | undefined;
  logLevel?: string | undefined;
}

/** Parses flags (and the log env vars istiod and ztunnel also read) once, into a frozen config. */
export function loadApiServerConfig(flags: ApiServerFlags, env: NodeJS.ProcessEnv = process.env): ApiServerConfig {
  const cidrText = flags.serviceCidr ?? APISERVER_DEFAULTS.serviceCidr;
  if (parseCidr(cidrText) === undefined || !cidrText.includes('/'))
    throw new MeshError(
      'AMESH_ERR_CONFIG',
      `--service-cidr: "${cidrText}" is not a CIDR (for example ${APISERVER_DEFAULTS.serviceCidr})`,
    );
  const eventHistory = Number(flags.eventHistory ?? APISERVER_DEFAULTS.eventHistory);
  if (!Number.isInteger(eventHistory) || eventHistory < 1)
    throw new MeshError(
      'AMESH_ERR_CONFIG',
      `--event-history: "${flags.eventHistory ?? ''}" must be a positive number of events`,
    );
  const logLevel = flags.logLevel ?? env['LOG_LEVEL'] ?? 'info';
  LogControl.parseSpec(logLevel);
  const logFormat = parseLogFormat(env);
  return Object.freeze({
    dataDir: path.resolve(flags.dataDir ?? APISERVER_DEFAULTS.dataDir),
    listen: parseListenAddress(flags.listen ?? APISERVER_DEFAULTS.listen, '--listen'),
    serviceCidr: cidrText,
    eventHistory,
    logLevel,
    logFormat,
  });
}
