/**
 * A client-node informer that keeps itself running. client-node's ListWatch relists after 410 Gone but stops
 * for good after any other error (a refused connection while the API server restarts, a 5xx); this restarts it
 * with backoff, resuming from its last resourceVersion, and reports when the first list has been applied, which
 * is what readiness waits on (client-go's HasSynced).
 *
 * client-node's ListWatch does not look at its stop flag between a list and the watch that follows it, so an
 * informer stopped while it lists would open a watch afterwards and keep delivering events: stop waits for the
 * run in flight and stops it again, and no handler is called once stop was.
 *
 * A resource the API does not serve (its list answered 404: a CRD that is not installed) is looked for again on the
 * same backoff, said once rather than warned of at every attempt; a reader that can do without it waits on
 * `syncedOrUnserved` instead of `synced`, and gets its objects through the handlers once it is served.
 *
 * The list function should return the API's JSON as it is (`listJson`): client-node's typed list calls turn
 * timestamps into Date objects, which its watch does not.
 */
import {
  ListWatch,
  Watch,
  type Informer,
  type KubeConfig,
  type KubernetesListObject,
  type KubernetesObject,
  type ObjectCache,
} from '@kubernetes/client-node';
import { Backoff } from '../lib/backoff.js';
import type { Logger } from '../lib/log.js';

/** Restart delays: quick enough to follow an API server restart, capped as client-go's reflector backoff is. */
const RESTART_INITIAL_MS = 200;
const RESTART_MAX_MS = 30_000;

export interface InformerHandlers<T extends KubernetesObject> {
  add?: (o: T) => void;
  update?: (o: T) => void;
  delete?: (o: T) => void;
}

export class RestartingInformer<T extends KubernetesObject> {
  private readonly inf: Informer<T> & ObjectCache<T>;
  private readonly backoff = new Backoff(RESTART_INITIAL_MS, RESTART_MAX_MS);
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;
  private resolveSynced: () => void = () => undefined;
  private resolveUnserved: () => void = () => undefined;
  /** Whether the last attempt found the resource unserved (said once, until it is served). */
  private unserved = false;
  /** The start or restart in flight: its list, then the watch it opens. */
  private running: Promise<void> = Promise.resolve();
  private hasSynced = false;
  private started = false;
  /** Resolves once the first list has been delivered to the handlers. */
  readonly synced: Promise<void>;
  /** Resolves as `synced` does, or earlier once the API answered that it does not serve the resource. */
  readonly syncedOrUnserved: Promise<void>;

  constructor(
    kc: KubeConfig,
    private readonly path: string,
    list: () => Promise<KubernetesListObject<T>>,
    handlers: InformerHandlers<T>,
    private readonly log: Logger,
    /** Watch only objects matching it (the `list` must apply the same selector); client-node's makeInformer takes none. */
    fieldSelector?: string,
  ) {
    this.synced = new Promise((r) => (this.resolveSynced = r));
    this.syncedOrUnserved = Promise.race([this.synced, new Promise<void>((r) => (this.resolveUnserved = r))]);
    this.inf = new ListWatch<T>(path, new Watch(kc), list, false, undefined, fieldSelector);
    this.addEventHandler(handlers);
    this.inf.on('error', (e: unknown) => {
      if (this.stopped) return;
      const delay = this.backoff.next();
      if ((e as { statusCode?: unknown } | null | undefined)?.statusCode === 404) {
        if (!this.unserved) this.log.info({ path }, 'not served by the API (no CRD?); looking for it again');
        this.unserved = true;
        this.resolveUnserved();
      } else
        this.log.warn(
          { path, err: e instanceof Error ? e.message : String(e), retryMs: delay },
          'watch failed; restarting',
        );
      this.timer = setTimeout(() => void (this.running = this.run()), delay);
    });
  }

  /**
   * Adds handlers of one more user (an informer shared through SharedInformerFactory has several). Only before
   * `start`: a handler added later would miss the objects already listed.
   */
  addEventHandler(handlers: InformerHandlers<T>): void {
    if (this.started) throw new Error(`${this.path}: event handlers must be added before the informer starts`);
    for (const verb of ['add', 'update', 'delete'] as const) {
      const h = handlers[verb];
      if (h === undefined) continue;
      this.inf.on(verb, (o: T) => {
        if (!this.stopped) h(o);
      });
    }
  }

  /** Lists, then watches; a second call does nothing. */
  start(): void {
    if (this.started) return;
    this.started = true;
    this.running = this.run();
  }

  private async run(): Promise<void> {
    if (this.stopped) return;
    let failed = false;
    const onError = (): void => void (failed = true);
    this.inf.on('error', onError);
    await this.inf.start();
    this.inf.off('error', onError);
    if (failed || this.stopped) return;
    this.backoff.reset();
    this.unserved = false;
    if (!this.hasSynced) {
      this.hasSynced = true;
      this.resolveSynced();
    }
  }

  list(namespace?: string): readonly T[] {
    return this.inf.list(namespace);
  }

  get(name: string, namespace?: string): T | undefined {
    return this.inf.get(name, namespace);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.inf.stop();
    await this.running;
    await this.inf.stop();
  }
}
