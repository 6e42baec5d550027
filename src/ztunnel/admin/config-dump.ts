import { X509Certificate } from 'node:crypto';
import { serialDecimal } from '../../lib/pki/pem.js';
import { VERSION, ISTIO_COMPAT } from '../../lib/version.js';
import type { ZtunnelConfig } from '../config.js';
import type { SecretManager } from '../identity/secret-manager.js';
import type { Authorization, RbacMatch } from '../state/policy.js';
import type { ProxyState } from '../state/proxy-state.js';

function certDump(pem: string): object {
  const c = new X509Certificate(pem);
  return {
    pem: Buffer.from(pem).toString('base64'),
    serialNumber: serialDecimal(c),
    validFrom: new Date(c.validFrom).toISOString(),
    expirationTime: new Date(c.validTo).toISOString(),
  };
}

/** A Match as ztunnel serialises it: empty lists left out, CIDRs as text. */
function matchDump(m: RbacMatch): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(m) as [string, unknown[]][]) {
    if (v.length === 0) continue;
    out[k] = v.map((x) => (typeof x === 'object' && x !== null && 'text' in x ? (x as { text: string }).text : x));
  }
  return out;
}

export function policyDump(p: Authorization): object {
  return { ...p, rules: p.rules.map((r) => r.map((c) => c.map(matchDump))) };
}

/** `/config_dump` in ztunnel's schema (ztunnel `src/admin.rs`), which `istioctl ztunnel-config` parses. */
export function configDump(
  cfg: ZtunnelConfig,
  state: ProxyState,
  secrets: SecretManager,
  workloadState: Record<string, object>,
): object {
  const s = state.dump();
  return {
    workloads: s.workloads,
    // A port's app protocol is for waypoints; ztunnel's dump has no place for it.
    services: s.services.map((svc) => ({ ...svc, appProtocols: undefined })),
    policies: s.policies.map(policyDump),
    stagedServices: s.stagedServices,
    staticConfig: { workloads: [], policies: [], services: [] },
    version: {
      version: VERSION,
      istioVersion: ISTIO_COMPAT,
      rustVersion: '',
      gitRevision: '',
      buildProfile: 'release',
      buildStatus: 'Clean',
      gitTag: VERSION,
      runtime: `node ${process.version}`,
    },
    // Header values may be credentials: keys only.
    config: {
      ...cfg,
      xdsHeaders: cfg.xdsHeaders.map(([k]) => [k, '<redacted>']),
      caHeaders: cfg.caHeaders.map(([k]) => [k, '<redacted>']),
    },
    certificates: secrets.snapshot().map(({ identity, state: st, cert }) => ({
      identity,
      state: st,
      certChain: cert === undefined ? [] : [cert.leafPem, ...cert.intermediatesPem].map(certDump),
      rootCerts: cert === undefined ? [] : cert.rootsPem.map(certDump),
    })),
    workloadState,
  };
}
