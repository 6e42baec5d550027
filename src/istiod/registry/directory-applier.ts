/**
 * Keeps a Kubernetes API in step with a manifest directory, for `istiod --config-dir` (`config-dir-api.ts`) and
 * `amesh up` (`src/up/cluster.ts`): the `ManifestDirectory` is loaded and applied once by `ManifestApplier`, then
 * each change is applied, only the objects that changed. An apply that fails (the API did not answer, or answered
 * with a 5xx) is retried with backoff over the whole directory, never only the latest change: the failure may
 * have left any earlier change half applied. A change made while a retry waits is that retry, at once.
 *
 * A policy the API refuses (its namespace missing, a value the API does not take) never reaches istiod's
 * informers, so istiod would simply lack it and allow what it should deny. Given istiod's config store (istiod
 * --config-dir, whose API has no validating webhook), its fail-closed stand-in is set there instead, as for a
 * document the directory refused, until the API takes the policy (its informer then replaces the stand-in) or the
 * directory no longer defines it.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { Backoff } from '../../lib/backoff.js';
import { describeError } from '../../lib/errors.js';
import type { LogControl, Logger } from '../../lib/log.js';
import type { ConfigStore } from './config-store.js';
import { ManifestApplier, type ApplyResult } from './manifest-applier.js';
import { ManifestDirectory } from './manifest-directory.js';

const RETRY_INITIAL_MS = 500;
const RETRY_MAX_MS = 15_000;

export interface DirectoryApplierOptions {
  readonly dir: string;
  /** The API to apply the directory to. */
  readonly kubeconfig: KubeConfig;
  /**
   * istiod's config store, fed by informers on that same API: where refused policies stand in. Absent where the
   * API refuses what istiod would not take (schemas and istiod's validating webhook, as `amesh up` installs them):
   * a refused object is then reported, as `kubectl apply` reports it.
   */
  readonly store?: ConfigStore;
  readonly logs: LogControl;
  /** Delays between retries of a failed apply; by default about 0.5 s, doubling up to 15 s. */
  readonly retry?: Backoff;
  /**
   * The directory's pods run nowhere but in it (istiod's embedded API has no kubelets): a pruned pod is deleted at
   * once (grace 0, as a kubelet confirms a deletion), not left Terminating.
   */
  readonly podsWithoutKubelets?: boolean;
}

export class DirectoryApplier {
  /** Keys of the policies that stand in in the store because the API refused them. */
  private readonly standIns = new Set<string>();
  private retryTimer: NodeJS.Timeout | undefined;
  private stopped = false;

  private constructor(
    private readonly directory: ManifestDirectory,
    private readonly applier: ManifestApplier,
    private readonly store: ConfigStore | undefined,
    private readonly log: Logger,
    private readonly retry: Backoff,
    /** What the first apply, of the whole directory, gave. */
    readonly initial: ApplyResult,
  ) {}

  /**
   * Loads the directory and applies all of it (its refused policies then stand in), then follows every change of
   * it. Rejects, having stopped, when that first apply fails.
   */
  static async start(o: DirectoryApplierOptions): Promise<DirectoryApplier> {
    const directory = new ManifestDirectory(o.dir, o.logs.scope('directory'));
    const applier = new ManifestApplier(
      directory,
      o.kubeconfig,
      o.logs.scope('applier'),
      o.podsWithoutKubelets === true,
    );
    let initial: ApplyResult;
    try {
      await directory.reload();
      initial = await applier.apply();
    } catch (e) {
      directory.stop();
      throw e;
    }
    const self = new DirectoryApplier(
      directory,
      applier,
      o.store,
      o.logs.scope('config-dir'),
      o.retry ?? new Backoff(RETRY_INITIAL_MS, RETRY_MAX_MS),
      initial,
    );
    self.settle(initial, undefined);
    directory.on('change', (changes) => {
      if (changes.size > 0) self.apply(new Set(changes.keys()));
    });
    directory.watch();
    return self;
  }

  /**
   * Applies the objects at `keys`, or every object when undefined or while a retry waits (which this apply then
   * is); a failure schedules a retry of everything.
   */
  private apply(keys: ReadonlySet<string> | undefined): void {
    if (this.retryTimer !== undefined) keys = undefined;
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    this.applier.apply(keys).then(
      (r) => {
        if (this.stopped) return;
        this.retry.reset();
        this.settle(r, keys);
      },
      (e: unknown) => {
        if (this.stopped) return;
        clearTimeout(this.retryTimer);
        const delayMs = this.retry.next();
        this.log.error(
          { error: describeError(e), retryInMs: delayMs },
          'cannot apply the config directory to the API; retrying all of it',
        );
        this.retryTimer = setTimeout(() => this.apply(undefined), delayMs);
        this.retryTimer.unref();
      },
    );
  }

  /**
   * Stands in for the policies the API refused, and drops stand-ins whose documents left the directory, among the
   * objects at `keys` (every object when undefined).
   */
  private settle(r: ApplyResult, keys: ReadonlySet<string> | undefined): void {
    if (this.store === undefined) return;
    const refused = new Set(r.refused.map((x) => x.key));
    for (const rejected of r.refused) {
      this.standIns.add(rejected.key);
      this.store.refuse(rejected);
    }
    for (const key of this.standIns) {
      if (refused.has(key) || (keys !== undefined && !keys.has(key))) continue;
      this.standIns.delete(key);
      // A stand-in whose policy the API now took is replaced by the informer's object; only one whose document
      // is gone is dropped here, since no informer will ever delete it.
      if (this.directory.get(key) === undefined) this.store.dropStandIn(key);
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    this.directory.stop();
    await this.applier.idle();
  }
}
