/**
 * A watch response, as k8s.io/apiserver pkg/endpoints/handlers/watch.go and the watch cache serve it: HTTP 200
 * with one JSON event per line. Without a resourceVersion (or with "0") the stream starts with the current
 * state as ADDED events; from a resourceVersion it replays what came after it, or sends one ERROR event with a
 * 410 Expired Status when that version is older than the retained history, which makes clients relist.
 * Bookmarks carry progress when asked for (every minute, and just before the stream ends); the stream ends
 * after timeoutSeconds (or a random 30–60 minutes, as the API server's default request timeout spreads
 * reconnects); a watcher that cannot keep up is closed so it never holds the server's memory, and resumes from
 * its last resourceVersion.
 */
import type http from 'node:http';
import { ApiError } from '../api-error.js';
import type { KindInfo } from '../kinds.js';
import type { KubeObject } from '../kube-object.js';
import type { ListOptions, Registry } from '../registry.js';
import { apiVersionOf } from '../kinds.js';

/** The API server's minRequestTimeout: watches without timeoutSeconds last between this and twice this. */
const MIN_REQUEST_TIMEOUT_S = 1800;
/** How often a bookmark is sent to watchers that allow them (the watch cache's bookmark frequency). */
const BOOKMARK_INTERVAL_MS = 60_000;
/** A watcher whose unsent events exceed this is closed instead of buffering without bound. */
const MAX_BUFFERED_BYTES = 32 * 1024 * 1024;

export interface WatchParams {
  readonly resourceVersion: string | undefined;
  readonly timeoutSeconds: number | undefined;
  readonly allowWatchBookmarks: boolean;
  readonly selectors: ListOptions;
}

export function serveWatch(res: http.ServerResponse, registry: Registry, k: KindInfo, namespace: string | undefined, p: WatchParams): void {
  const rv = p.resourceVersion ?? '';
  if (rv !== '' && !/^\d+$/.test(rv)) throw new ApiError('BadRequest', `resourceVersion: Invalid value: "${rv}": must be a non-negative integer`);
  // Selectors are parsed (and refused) before the 200 goes out.
  const initial = rv === '' || rv === '0' ? registry.list(k, namespace, p.selectors) : undefined;
  const from = initial !== undefined ? Number(initial.metadata.resourceVersion) : Number(rv);
  let progress = from;
  let closed = false;
  const write = (type: string, object: KubeObject): void => {
    if (closed) return;
    res.write(JSON.stringify({ type, object }) + '\n');
    if (res.writableLength > MAX_BUFFERED_BYTES) close();
  };
  let unsubscribe: (() => void) | undefined;
  const timers: { timeout?: NodeJS.Timeout; bookmarks?: NodeJS.Timeout } = {};
  const close = (): void => {
    if (closed) return;
    closed = true;
    unsubscribe?.();
    clearTimeout(timers.timeout);
    clearInterval(timers.bookmarks);
    res.end();
  };
  res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-cache, private', 'transfer-encoding': 'chunked' });
  // Clients (client-node's Watch) wait for the response headers before they consider the watch established.
  res.flushHeaders();
  res.on('close', close);
  try {
    unsubscribe = registry.watch(k, namespace, from, p.selectors, (e) => {
      progress = Number(e.object.metadata.resourceVersion ?? progress);
      write(e.type, e.object);
    }, close);
  } catch (e) {
    if (e instanceof ApiError && (e.reason === 'Expired' || e.reason === 'Gone')) {
      write('ERROR', e.toStatus());
      close();
      return;
    }
    close();
    throw e;
  }
  for (const o of initial?.items ?? []) write('ADDED', o);
  const timeoutMs = (p.timeoutSeconds ?? MIN_REQUEST_TIMEOUT_S * (1 + Math.random())) * 1000;
  const bookmark = (): void => write('BOOKMARK', { apiVersion: apiVersionOf(k), kind: k.kind, metadata: { resourceVersion: String(progress) } });
  // As the watch cache does, a watcher that allows bookmarks gets one before its timeout ends the stream, so it
  // resumes from the newest version it has seen rather than relisting.
  timers.timeout = setTimeout(() => {
    if (p.allowWatchBookmarks) bookmark();
    close();
  }, timeoutMs).unref();
  if (p.allowWatchBookmarks) timers.bookmarks = setInterval(bookmark, BOOKMARK_INTERVAL_MS).unref();
}
