import pLimit from 'p-limit';

/**
 * Runs `fn` over `items` with at most `limit` calls in flight (p-limit), resolving when all have settled; the first
 * rejection rejects it after the calls already started have settled.
 */
export async function forEachLimited<T>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<void>,
): Promise<void> {
  const run = pLimit(limit);
  const results = await Promise.allSettled(items.map((item) => run(() => fn(item))));
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed !== undefined) throw failed.reason;
}
