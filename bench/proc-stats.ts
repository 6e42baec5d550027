/** What the bench reads about the processes it measures (from /proc), and how it folds rounds into one figure. */
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';

/** User + system CPU seconds the processes have used so far (0 for a process that is gone). */
export function cpuSeconds(pids: readonly number[]): number {
  let ticks = 0;
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks += Number(f[11]) + Number(f[12]);
    } catch {
      /* process gone */
    }
  }
  return ticks / 100;
}

/**
 * Seconds the process's main thread has spent runnable but waiting for a core (the second field of
 * /proc/PID/schedstat): on a shared host, the delay the scheduler adds to whatever that thread serves.
 */
export function runQueueSeconds(pid: number): number {
  try {
    return Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[1]) / 1e9;
  } catch {
    return 0;
  }
}

async function statusKiB(pids: readonly number[], field: 'VmHWM' | 'VmRSS'): Promise<number> {
  let kb = 0;
  for (const pid of pids) {
    const st = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
    kb += Number(new RegExp(`${field}:\\s+(\\d+)`).exec(st)?.[1] ?? 0);
  }
  return kb;
}

/** The processes' peak resident memory (VmHWM), summed, in MiB. */
export async function rssMiB(pids: readonly number[]): Promise<number> {
  return (await statusKiB(pids, 'VmHWM')) / 1024;
}

/** The processes' resident memory now (VmRSS), summed, in MiB. */
export async function currentRssMiB(pids: readonly number[]): Promise<number> {
  return (await statusKiB(pids, 'VmRSS')) / 1024;
}

export function median(values: readonly number[]): number {
  const v = [...values].sort((a, b) => a - b);
  const mid = v.length >> 1;
  return v.length % 2 === 1 ? v[mid]! : (v[mid - 1]! + v[mid]!) / 2;
}

/** The value at quantile `p` (0..1) of `values`. */
export function quantile(values: readonly number[], p: number): number {
  const v = [...values].sort((a, b) => a - b);
  return v[Math.min(v.length - 1, Math.floor(p * v.length))]!;
}

/**
 * How much `values` (one per round, in order) change over the run by a least-squares line through them, relative to
 * their mean (-0.1: the fitted line ends 10% of the mean below where it starts), with the half-width of its 95%
 * interval (two standard errors of the slope). A trend across every round, where comparing the last round with the
 * first would measure two rounds' noise; needs three rounds or more.
 */
export function fittedChange(values: readonly number[]): { change: number; halfWidth95: number } {
  const n = values.length;
  const xMean = (n - 1) / 2;
  const yMean = values.reduce((a, b) => a + b, 0) / n;
  let sxy = 0;
  let sxx = 0;
  values.forEach((y, x) => {
    sxy += (x - xMean) * (y - yMean);
    sxx += (x - xMean) ** 2;
  });
  const slope = sxy / sxx;
  const residual = values.reduce((a, y, x) => a + (y - (yMean + slope * (x - xMean))) ** 2, 0);
  const slopeError = Math.sqrt(residual / (n - 2) / sxx);
  return { change: (slope * (n - 1)) / yMean, halfWidth95: (2 * slopeError * (n - 1)) / yMean };
}
