import type net from 'node:net';
import { quantile } from './proc-stats.js';

/** Round-trip percentiles of one path, in µs. */
export interface Percentiles {
  p50: number;
  p99: number;
  p999: number;
}

/** One path to time: a connection to an echo server through it. */
export interface LatencyPath {
  readonly name: string;
  readonly socket: net.Socket;
}

/** One ping-pong of `msg` on `s` (an echo), in µs. */
function pingPong(s: net.Socket, msg: Buffer): Promise<number> {
  const t0 = process.hrtime.bigint();
  return new Promise<number>((resolve) => {
    let got = 0;
    const onData = (d: Buffer): void => {
      got += d.length;
      if (got >= msg.length) {
        s.off('data', onData);
        resolve(Number(process.hrtime.bigint() - t0) / 1000);
      }
    };
    s.on('data', onData);
    s.write(msg);
  });
}

/**
 * 64-byte ping-pongs on one open connection per path, in blocks of `block` taken in turn (path 1, path 2, ...,
 * path 1 again), until each path has `rounds` counted after its first `warmup`. Every path's percentiles then come
 * from the same seconds of the machine: timed one path after another, a path's p50 moved by up to a third from
 * one second to the next on the bench host, more than the differences the ratios are about. Within a block a
 * path's round trips follow each other as they did alone; alternating every single ping-pong instead left each
 * proxy idle while the others ran, and measured that as well (docs/performance.md, "Latency, interleaved").
 */
export async function interleavedLatency(
  paths: readonly LatencyPath[],
  rounds: number,
  warmup: number,
  block: number,
): Promise<Map<string, Percentiles>> {
  const msg = Buffer.alloc(64, 0x62);
  const samples = paths.map(() => [] as number[]);
  for (const p of paths) p.socket.resume();
  for (let done = 0; done < warmup + rounds; done += block) {
    for (let k = 0; k < paths.length; k++) {
      for (let i = done; i < Math.min(done + block, warmup + rounds); i++) {
        const us = await pingPong(paths[k]!.socket, msg);
        if (i >= warmup) samples[k]!.push(us);
      }
    }
  }
  return new Map(
    paths.map((p, k) => [
      p.name,
      { p50: quantile(samples[k]!, 0.5), p99: quantile(samples[k]!, 0.99), p999: quantile(samples[k]!, 0.999) },
    ]),
  );
}
