/**
 * `amesh istiod --config-dir`: the manifest directory is served through an embedded API server, as on a
 * single machine amesh always is. The directory registry reads and watches the files (refusing bad documents
 * with `file:line` and keeping each object's last good version), the applier applies them into the API as
 * `kubectl apply --prune` would, and istiod's own registry is then fed by the same informers as on a real
 * cluster. Operators can use `kubectl --kubeconfig <state dir>/apiserver/kubeconfig` on the result.
 *
 * A policy the API refuses (its namespace missing, a name the API does not take) never reaches the informers;
 * the served registry stands in for it fail-closed, as it does for a policy whose document was refused, until
 * the API takes it or the directory drops it.
 */
import path from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { ApiServer } from '../../apiserver/api-server.js';
import { loadApiServerConfig } from '../../apiserver/config.js';
import { Backoff } from '../../lib/backoff.js';
import { describeError } from '../../lib/errors.js';
import type { LogControl, Logger } from '../../lib/log.js';
import type { ListenAddress } from '../../lib/address.js';
import { ManifestApplier, type ApplyResult } from './manifest-applier.js';
import type { ConfigStore } from './config-store.js';
import { ManifestDirectory } from './manifest-directory.js';

/** The embedded API server's data (store, cluster CA, admin kubeconfig) under istiod's state directory. */
export const EMBEDDED_API_DIR = 'apiserver';

export class ConfigDirApi {
  private readonly files: ManifestDirectory;
  private readonly applier: ManifestApplier;
  /** Keys the served registry stands in for because the API refused them. */
  private readonly standIns = new Set<string>();
  private readonly retry = new Backoff(500, 15_000);
  private retryTimer: NodeJS.Timeout | undefined;
  private stopped = false;

  private constructor(
    private readonly api: ApiServer,
    readonly kubeconfig: KubeConfig,
    configDir: string,
    private readonly served: ConfigStore,
    private readonly log: Logger,
    logs: LogControl,
  ) {
    this.files = new ManifestDirectory(configDir, logs.scope('directory'));
    this.applier = new ManifestApplier(this.files, kubeconfig, logs.scope('applier'));
  }

  /**
   * Starts the API server (listening on `listen`, its data in `<stateDir>/apiserver`), and applies the directory
   * once; then follows every change of it. `served` is the registry the informers feed.
   */
  static async start(
    configDir: string,
    stateDir: string,
    listen: ListenAddress,
    served: ConfigStore,
    logs: LogControl,
  ): Promise<ConfigDirApi> {
    const apiConfig = loadApiServerConfig(
      { dataDir: path.join(stateDir, EMBEDDED_API_DIR), listen: `${listen.host}:${listen.port}` },
      {},
    );
    const api = await ApiServer.start(apiConfig, logs);
    const kc = new KubeConfig();
    kc.loadFromFile(api.kubeconfigPath);
    const self = new ConfigDirApi(api, kc, configDir, served, logs.scope('config-dir'), logs);
    try {
      await self.files.reload();
      self.settle(await self.applier.apply(), undefined);
    } catch (e) {
      await self.stop();
      throw e;
    }
    self.files.on('change', (changes) => {
      if (changes.size > 0) self.applyNow(new Set(changes.keys()));
    });
    self.files.watch();
    return self;
  }

  get kubeconfigPath(): string {
    return this.api.kubeconfigPath;
  }

  get url(): string {
    return this.kubeconfig.getCurrentCluster()?.server ?? '';
  }

  /**
   * Applies the objects at `keys`, or, after a failed apply, everything (the failure may have left any of the
   * earlier changes half applied).
   */
  private applyNow(keys: ReadonlySet<string> | undefined): void {
    if (this.retryTimer !== undefined) keys = undefined;
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    this.applier.apply(keys).then(
      (r) => {
        this.retry.reset();
        this.settle(r, keys);
      },
      (e: unknown) => {
        if (this.stopped) return;
        const delayMs = this.retry.next();
        this.log.error(
          { error: describeError(e), retryInMs: delayMs },
          'cannot apply the config directory to the API; retrying',
        );
        this.retryTimer = setTimeout(() => this.applyNow(undefined), delayMs);
        this.retryTimer.unref();
      },
    );
  }

  /**
   * Stands in for the policies the API refused, and drops stand-ins whose documents left the directory, among
   * the objects at `keys` (every object when undefined).
   */
  private settle(r: ApplyResult, keys: ReadonlySet<string> | undefined): void {
    const refused = new Set(r.refused.map((x) => x.key));
    for (const rejected of r.refused) {
      this.standIns.add(rejected.key);
      this.served.refuse(rejected);
    }
    for (const key of this.standIns) {
      if (refused.has(key) || (keys !== undefined && !keys.has(key))) continue;
      this.standIns.delete(key);
      // A stand-in whose policy the API now took is replaced by the informer's object; only one whose document
      // is gone is dropped here, since no informer will ever delete it.
      if (this.files.get(key) === undefined) this.served.dropStandIn(key);
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    this.files.stop();
    await this.applier.idle();
    await this.api.stop();
  }
}
