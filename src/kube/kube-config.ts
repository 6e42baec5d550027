/**
 * Where amesh components find their Kubernetes API, in the order Istio's components look: an explicit
 * `--kubeconfig`, then `KUBECONFIG`, then the in-cluster service account (KUBERNETES_SERVICE_HOST and the
 * mounted token). A `KUBECONFIG` naming a file that does not exist is skipped, as client-go's loading rules skip
 * missing files of that list: Istio's istiod chart sets KUBECONFIG=/var/run/secrets/remote/config, a file that
 * exists only when the optional `istio-kubeconfig` Secret does, and istiod runs on its service account otherwise.
 * Unlike client-node's loadFromDefault, nothing falls back to http://localhost:8080: a component with no API
 * configured says so.
 *
 * A kubeconfig user may carry client-go's `tokenFile` (a bearer token read from a file, reread as the file is
 * renewed, as a pod's projected service-account token is). client-node's loader ignores that key, so such a user
 * is given client-node's own token-file authenticator, the one its in-cluster configuration uses, which rereads
 * the file every minute. A relative path is relative to the kubeconfig's directory, as client-go resolves it.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { parse as parseYaml } from 'yaml';
import { MeshError } from '../lib/errors.js';
import { PooledKubeConfig } from './pooled-kube-config.js';

/** Where Kubernetes mounts a pod's service-account token. */
const IN_CLUSTER_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';
/** client-node's authenticator for a token kept in a file (its FileAuth, chosen by `authProvider.config.tokenFile`). */
const TOKEN_FILE_PROVIDER = 'tokenFile';

export function loadKubeConfig(
  flag: string | undefined,
  env: Readonly<Record<string, string | undefined>> = process.env,
): KubeConfig {
  const kc = new PooledKubeConfig();
  const fromEnv = env['KUBECONFIG'];
  const file = flag ?? (fromEnv !== undefined && existsSync(fromEnv) ? fromEnv : undefined);
  try {
    if (file !== undefined && file !== '') {
      kc.loadFromFile(file);
      useTokenFiles(kc, file);
    } else if (env['KUBERNETES_SERVICE_HOST'] !== undefined && existsSync(IN_CLUSTER_TOKEN)) {
      kc.loadFromCluster();
    } else {
      throw new Error(
        fromEnv === undefined || fromEnv === ''
          ? 'no --kubeconfig, no KUBECONFIG and not running in a pod'
          : `KUBECONFIG names ${fromEnv}, which does not exist, and not running in a pod`,
      );
    }
  } catch (e) {
    throw new MeshError(
      'AMESH_ERR_CONFIG',
      `cannot load a Kubernetes API configuration: ${(e as Error).message} (pass --kubeconfig FILE, e.g. the kubeconfig in amesh apiserver's --data-dir)`,
      { cause: e },
    );
  }
  if (kc.getCurrentCluster() === null)
    throw new MeshError('AMESH_ERR_CONFIG', `the kubeconfig ${file ?? ''} has no current context with a cluster`);
  return kc;
}

interface RawKubeconfig {
  users?: { name?: unknown; user?: { token?: unknown; tokenFile?: unknown } | null }[] | null;
}

/** Gives each user of `file` that has a `tokenFile` and no `token` client-node's rereading token-file authenticator. */
function useTokenFiles(kc: KubeConfig, file: string): void {
  const raw = parseYaml(readFileSync(file, 'utf8')) as RawKubeconfig | null;
  const tokenFiles = new Map<string, string>();
  for (const u of raw?.users ?? []) {
    const tokenFile = u.user?.tokenFile;
    if (typeof u.name === 'string' && typeof tokenFile === 'string' && tokenFile !== '' && (u.user?.token ?? '') === '')
      tokenFiles.set(u.name, path.resolve(path.dirname(file), tokenFile));
  }
  if (tokenFiles.size === 0) return;
  kc.users = kc.users.map((u) => {
    const tokenFile = tokenFiles.get(u.name);
    return tokenFile === undefined ? u : { ...u, authProvider: { name: TOKEN_FILE_PROVIDER, config: { tokenFile } } };
  });
}

/** The file a user's bearer token is read from (in a pod, or a kubeconfig `tokenFile`), if it is read from one. */
export function userTokenFile(kc: KubeConfig): string | undefined {
  const config = (kc.getCurrentUser()?.authProvider as { config?: { tokenFile?: unknown } } | undefined)?.config;
  return typeof config?.tokenFile === 'string' ? config.tokenFile : undefined;
}
