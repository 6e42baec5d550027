/**
 * `amesh istiod --config-dir`: the manifest directory is served through an embedded API server, as on a single
 * machine amesh always is. `DirectoryApplier` applies the directory to it as `kubectl apply --prune` would and
 * follows its changes, and istiod's config store is then fed by the same informers as on a real cluster (a policy
 * the API refuses stands in there fail-closed). Operators can use `kubectl --kubeconfig <state dir>/apiserver/kubeconfig`
 * on the result.
 */
import path from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { ApiServer } from '../../apiserver/api-server.js';
import { PooledKubeConfig } from '../../kube/pooled-kube-config.js';
import { loadApiServerConfig } from '../../apiserver/config.js';
import type { LogControl } from '../../lib/log.js';
import type { ListenAddress } from '../../lib/address.js';
import type { ConfigStore } from './config-store.js';
import { DirectoryApplier } from './directory-applier.js';

/** The embedded API server's data (store, cluster CA, admin kubeconfig) under istiod's state directory. */
export const EMBEDDED_API_DIR = 'apiserver';

export class ConfigDirApi {
  private constructor(
    private readonly api: ApiServer,
    readonly kubeconfig: KubeConfig,
    private readonly applier: DirectoryApplier,
  ) {}

  /**
   * Starts the API server (listening on `listen`, its data in `<stateDir>/apiserver`), and applies the directory
   * once; then follows every change of it. `store` is the config store the informers feed.
   */
  static async start(
    configDir: string,
    stateDir: string,
    listen: ListenAddress,
    store: ConfigStore,
    logs: LogControl,
  ): Promise<ConfigDirApi> {
    const apiConfig = loadApiServerConfig(
      { dataDir: path.join(stateDir, EMBEDDED_API_DIR), listen: `${listen.host}:${listen.port}` },
      {},
    );
    const api = await ApiServer.start(apiConfig, logs);
    const kc = new PooledKubeConfig();
    kc.loadFromFile(api.kubeconfigPath);
    try {
      return new ConfigDirApi(
        api,
        kc,
        await DirectoryApplier.start({ dir: configDir, kubeconfig: kc, store, logs, podsWithoutKubelets: true }),
      );
    } catch (e) {
      await api.stop();
      throw e;
    }
  }

  get kubeconfigPath(): string {
    return this.api.kubeconfigPath;
  }

  async stop(): Promise<void> {
    await this.applier.stop();
    await this.api.stop();
  }
}
