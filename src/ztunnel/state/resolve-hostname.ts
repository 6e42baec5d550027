import { lookup } from 'node:dns/promises';
import { MeshError, describeError } from '../../lib/errors.js';

/**
 * Resolves a hostname-only workload (ServiceEntry endpoint, WorkloadEntry by name): a random address among the
 * records, preferring the family of the original destination (ztunnel `src/proxy/outbound.rs`).
 */
export async function resolveWorkloadHostname(
  hostname: string,
  preferFamily: number,
  random: () => number = Math.random,
): Promise<string> {
  let records: { address: string; family: number }[];
  try {
    records = await lookup(hostname, { all: true });
  } catch (e) {
    throw new MeshError(
      'ZT_ERR_NO_HEALTHY_UPSTREAM',
      `cannot resolve workload hostname ${hostname}: ${describeError(e)}`,
    );
  }
  const same = records.filter((r) => r.family === preferFamily);
  const pool = same.length > 0 ? same : records;
  const pick = pool[Math.floor(random() * pool.length)];
  if (pick === undefined)
    throw new MeshError('ZT_ERR_NO_HEALTHY_UPSTREAM', `workload hostname ${hostname} has no addresses`);
  return pick.address;
}
