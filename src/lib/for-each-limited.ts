/**
 * Runs `fn` over `items` with at most `limit` calls in flight, resolving when all have settled; the first
 * rejection rejects it after the calls already started have settled. Written by hand: it is a dozen lines, and
 * the npm packages for it (p-limit, p-map) are ESM-only majors that need Node 22 or pull further dependencies.
 */
export async function forEachLimited<T>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) await fn(items[next++] as T);
  };
  const results = await Promise.allSettled(Array.from({ length: Math.min(limit, items.length) }, worker));
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed !== undefined) throw failed.reason;
}
