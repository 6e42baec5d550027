/**
 * A watch response, as k8s.io/apiserver pkg/endpoints/handlers/watch.go and the watch cache serve it: HTTP 200
 * with one JSON event per line. Without a resourceVersion (or with "0"), or with `sendInitialEvents=true`, the
 * stream starts with the current state as ADDED events (the latter ends them with the `k8s.io/initial-events-end`
 * bookmark); from a resourceVersion it replays what came after it, or sends one ERROR event with a 410 Expired
 * Status when that version is older than the retained history, which makes clients relist. Anything wrong with
 * the request is an error status before the 200 goes out.
 *
 * Bookmarks carry the store's progress when asked for (every minute, and just before the stream ends); the stream
 * ends after timeoutSeconds (or a random 30–60 minutes, as the API server's default request timeout spreads
 * reconnects). The initial state is written as fast as the client reads it; a watcher whose live backlog grows
 * past a bound is closed so it never holds the server's memory, and resumes from its last resourceVersion.
 */
import type http from 'node:http';
import { once } from 'node:events';
import { ApiError } from '../api-error.js';
import type { KindInfo } from '../kind-info.js';
import type { KubeObject } from '../kube-object.js';
import type { ListOptions, ResourceStore, ResourceEvent } from '../resource-store.js';
import { apiVersionOf } from '../kinds.js';
import { inServedVersion, storageKindOf } from '../version-conversion.js';
import { toTable, type IncludeObject } from './table.js';

/** The API server's minRequestTimeout: watches without timeoutSeconds last between this and twice this. */
const MIN_REQUEST_TIMEOUT_S = 1800;
/** Node timers hold at most 2^31-1 ms; a longer timeoutSeconds is that long. */
const MAX_TIMER_MS = 2 ** 31 - 1;
/** How often a bookmark is sent to watchers that allow them (the watch cache's bookmark frequency). */
const BOOKMARK_INTERVAL_MS = 60_000;
/** A watcher whose unsent live events exceed this is closed instead of buffering without bound. */
const MAX_BUFFERED_BYTES = 32 * 1024 * 1024;
/** The annotation of the bookmark that ends the initial events of a `sendInitialEvents` watch. */
const INITIAL_EVENTS_END = 'k8s.io/initial-events-end';

export interface WatchParams {
  readonly resourceVersion: string | undefined;
  readonly timeoutSeconds: number | undefined;
  readonly allowWatchBookmarks: boolean;
  readonly sendInitialEvents: boolean | undefined;
  readonly resourceVersionMatch: string | undefined;
  readonly selectors: ListOptions;
  /** Events as meta.k8s.io Tables (`kubectl get -w`), with what each row carries of its object. */
  readonly table: IncludeObject | undefined;
}

/** Checks the parameters as ListOptions validation does, before anything is sent. */
function validate(p: WatchParams): void {
  const rv = p.resourceVersion ?? '';
  if (rv !== '' && !/^\d+$/.test(rv))
    throw new ApiError('BadRequest', `resourceVersion: Invalid value: "${rv}": must be a non-negative integer`);
  if (p.sendInitialEvents !== undefined) {
    if (!p.allowWatchBookmarks)
      throw new ApiError(
        'Invalid',
        'ListOptions.meta.k8s.io "" is invalid: allowWatchBookmarks: Forbidden: sendInitialEvents requires setting allowWatchBookmarks to true',
      );
    if (p.resourceVersionMatch !== 'NotOlderThan')
      throw new ApiError(
        'Invalid',
        `ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan`,
      );
  } else if (p.resourceVersionMatch !== undefined && p.resourceVersionMatch !== '') {
    throw new ApiError(
      'Invalid',
      'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided',
    );
  }
}

export function serveWatch(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  store: ResourceStore,
  servedKind: KindInfo,
  namespace: string | undefined,
  p: WatchParams,
): void {
  validate(p);
  // Events of another served version of a custom kind come from the stored one, in the served version.
  const k = storageKindOf(servedKind);
  // A client that left while it was being authenticated has nothing to watch.
  if (req.socket.destroyed || res.destroyed) return;
  const rv = p.resourceVersion ?? '';
  const wantsInitial = p.sendInitialEvents ?? (rv === '' || rv === '0');
  const initial = wantsInitial ? store.list(k, namespace, p.selectors) : undefined;
  const from = initial !== undefined ? Number(initial.metadata.resourceVersion) : Number(rv);
  let closed = false;
  /** Live events that arrive while the initial state is still being written. */
  let queued: ResourceEvent[] | undefined = initial !== undefined ? [] : undefined;
  const timers: { timeout?: NodeJS.Timeout; bookmarks?: NodeJS.Timeout } = {};
  let unsubscribe: (() => void) | undefined;
  const close = (): void => {
    if (closed) return;
    closed = true;
    unsubscribe?.();
    clearTimeout(timers.timeout);
    clearInterval(timers.bookmarks);
    res.end();
  };
  let columns = true;
  const asTable = (type: string, object: KubeObject): unknown => {
    if (p.table === undefined || type === 'ERROR' || type === 'BOOKMARK') return object;
    // As the API server's watch handler does, only the first event carries the column definitions.
    const t = toTable(k, [object], object.metadata.resourceVersion ?? '', p.table) as { columnDefinitions?: unknown };
    if (!columns) delete t.columnDefinitions;
    columns = false;
    return t;
  };
  const write = (type: string, object: KubeObject): boolean =>
    closed
      ? false
      : res.write(JSON.stringify({ type, object: asTable(type, inServedVersion(servedKind, object)) }) + '\n');
  const live = (e: ResourceEvent): void => {
    if (queued !== undefined) {
      queued.push(e);
      return;
    }
    write(e.type, e.object);
    if (res.writableLength > MAX_BUFFERED_BYTES) close();
  };
  try {
    unsubscribe = store.watch(k, namespace, from, p.selectors, live, close);
  } catch (e) {
    if (!(e instanceof ApiError && (e.reason === 'Expired' || e.reason === 'Gone'))) throw e;
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-cache, private' });
    write('ERROR', e.toStatus());
    close();
    return;
  }
  res.writeHead(200, {
    'content-type': 'application/json',
    'cache-control': 'no-cache, private',
    'transfer-encoding': 'chunked',
  });
  // Clients (client-node's Watch) wait for the response headers before they consider the watch established.
  res.flushHeaders();
  res.on('close', close);
  const bookmark = (annotations?: Record<string, string>): void => {
    // The store's revision: every event up to it has reached this watcher's listener (filtered or not).
    write('BOOKMARK', {
      apiVersion: apiVersionOf(servedKind),
      kind: k.kind,
      metadata: {
        resourceVersion: String(Math.max(store.revision(), from)),
        ...(annotations !== undefined ? { annotations } : {}),
      },
    });
  };
  const timeoutS =
    p.timeoutSeconds === undefined || p.timeoutSeconds === 0
      ? MIN_REQUEST_TIMEOUT_S * (1 + Math.random())
      : p.timeoutSeconds;
  // As the watch cache does, a watcher that allows bookmarks gets one before its timeout ends the stream, so it
  // resumes from the newest version rather than relisting.
  timers.timeout = setTimeout(
    () => {
      if (p.allowWatchBookmarks) bookmark();
      close();
    },
    Math.min(timeoutS * 1000, MAX_TIMER_MS),
  ).unref();
  if (p.allowWatchBookmarks) timers.bookmarks = setInterval(() => bookmark(), BOOKMARK_INTERVAL_MS).unref();
  if (initial === undefined) return;
  void (async () => {
    for (const o of initial.items) {
      if (!write('ADDED', o) && !closed) await Promise.race([once(res, 'drain'), once(res, 'close')]);
      if (closed) return;
    }
    if (p.sendInitialEvents === true)
      write('BOOKMARK', {
        apiVersion: apiVersionOf(servedKind),
        kind: k.kind,
        metadata: { resourceVersion: String(from), annotations: { [INITIAL_EVENTS_END]: 'true' } },
      });
    const backlog = queued ?? [];
    queued = undefined;
    for (const e of backlog) live(e);
  })();
}
