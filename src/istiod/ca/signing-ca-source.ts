/**
 * Where istiod's signing CA comes from, in the order Istio's istiod looks (istio
 * `pilot/pkg/bootstrap/istio_ca.go` createIstioCA, checkCABundleCompleteness):
 * 1. a plug-in CA in the `cacerts` directory (ROOT_CA_DIR, default `./etc/cacerts`: the chart mounts the optional
 *    Secret `cacerts` at /etc/cacerts; amesh's `--ca-dir` overrides it), when all of its files are there. Some of
 *    them without the others stop istiod, as Istio's "incomplete signing CA bundle" does; so does a `--ca-dir`
 *    without them, since it was asked for;
 * 2. on a Kubernetes API (`--kubeconfig`), the self-signed CA in the `istio-ca-secret` Secret
 *    (self-signed-ca-secret.ts), shared by every replica and restart;
 * 3. otherwise (`--config-dir`: `amesh demo`, tests), a self-signed root and intermediate kept in `<state-dir>/ca`.
 *    Istio's istiod without Kubernetes makes a new in-memory root at every start (NewSelfSignedDebugIstioCAOptions);
 *    amesh keeps it so that local ztunnels keep trusting a restarted istiod.
 */
import { access } from 'node:fs/promises';
import path from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { isMeshError, MeshError } from '../../lib/errors.js';
import type { Logger } from '../../lib/log.js';
import { CertificateAuthority, PLUGIN_CA_FILES, writePluginCaDir } from '../../lib/pki/certificate-authority.js';
import { inspectPluginCaDir, type PluginCaLayout } from '../../lib/pki/plugin-ca-dir.js';
import type { IstiodConfig } from '../config.js';
import { loadOrCreateCaSecret } from './self-signed-ca-secret.js';

export type SigningCaSource = 'plugged' | 'secret' | 'state-dir';

/** The source for a `cacerts` directory in `layout`; throws ZT_ERR_CA_FILES for an incomplete one. */
export function signingCaSource(
  layout: PluginCaLayout,
  o: { readonly dir: string; readonly required: boolean; readonly kube: boolean },
): SigningCaSource {
  if (layout.missing.length === 0) return 'plugged';
  if (layout.present.length > 0 || o.required) {
    throw new MeshError(
      'ZT_ERR_CA_FILES',
      `${o.dir}: incomplete plug-in CA: ${layout.present.length > 0 ? `it has ${layout.present.join(', ')} but` : 'it'} lacks ${layout.missing.join(', ')}; provide all of them (or none, for a self-signed CA)`,
    );
  }
  return o.kube ? 'secret' : 'state-dir';
}

/** The signing CA istiod uses, from the first source that applies (see the file comment). */
export async function loadSigningCa(
  cfg: IstiodConfig,
  log: Logger,
): Promise<{ readonly ca: CertificateAuthority; readonly source: SigningCaSource }> {
  const { dir, required } = cfg.pluggedCa;
  const source = signingCaSource(await inspectPluginCaDir(dir), { dir, required, kube: cfg.kube !== undefined });
  switch (source) {
    case 'plugged':
      log.info({ dir }, 'signing with the plug-in CA');
      return { ca: await CertificateAuthority.fromPluginDir(dir), source };
    case 'secret': {
      const ca = await loadOrCreateCaSecret(
        cfg.kube!.makeApiClient(CoreV1Api),
        {
          namespace: cfg.podNamespace,
          trustDomain: cfg.trustDomain,
          rootTtlMs: cfg.selfSignedCa.rootTtlMs,
          timeoutMs: cfg.selfSignedCa.loadTimeoutMs,
        },
        log,
      );
      return { ca: CertificateAuthority.fromSigningCa(ca), source };
    }
    case 'state-dir':
      return { ca: await stateDirCa(cfg.stateDir, cfg.trustDomain), source };
  }
}

/** The self-signed CA in `<stateDir>/ca`, created there once. */
async function stateDirCa(stateDir: string, trustDomain: string): Promise<CertificateAuthority> {
  const dir = path.join(stateDir, 'ca');
  const exists = await access(path.join(dir, PLUGIN_CA_FILES.caKey)).then(
    () => true,
    () => false,
  );
  if (!exists) {
    try {
      await writePluginCaDir(dir, trustDomain);
    } catch (e) {
      if (isMeshError(e)) throw e;
      throw new MeshError('ISTIOD_ERR_STATE', `cannot create the self-signed CA in ${dir}: ${(e as Error).message}`);
    }
  }
  return CertificateAuthority.fromPluginDir(dir);
}
