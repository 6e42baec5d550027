import { EventEmitter } from 'node:events';
import { closeSync, openSync, readdirSync } from 'node:fs';
import type { InpodProxyRunner } from '../../src/ztunnel/inpod/inpod-proxy-runner.js';
import type { WorkloadInfo } from '../../src/zds/workload-info.js';

/**
 * An InpodProxyRunner that starts nothing but keeps the contract's fd ownership (it holds a started pod's netns fd
 * and closes it at stop) and records what it was asked, so a test sees what the ZDS state manager decided.
 * A uid in `failing` fails to start, as a pod whose ports are still held by an old ztunnel would.
 */
export class RecordingRunner extends EventEmitter<{ event: [string] }> implements InpodProxyRunner {
  /** `start UID` or `fail UID`; `stop UID` (and, emitted only, `starting UID` as a start begins). */
  readonly events: string[] = [];
  readonly held = new Map<string, number>();
  readonly infos = new Map<string, WorkloadInfo>();
  readonly failing = new Set<string>();

  /** While set, a start waits for it (a bind still in progress). */
  hold: Promise<void> | undefined;

  async start(uid: string, info: WorkloadInfo, netns: number): Promise<void> {
    this.emit('event', `starting ${uid}`);
    await this.hold;
    if (this.failing.has(uid)) {
      this.record(`fail ${uid}`);
      throw new Error(`listen EADDRINUSE for ${uid} (test)`);
    }
    this.held.set(uid, netns);
    this.infos.set(uid, info);
    this.record(`start ${uid}`);
  }

  stop(uid: string): void {
    const fd = this.held.get(uid);
    if (fd !== undefined) closeSync(fd);
    this.held.delete(uid);
    this.record(`stop ${uid}`);
  }

  /** The first recorded event equal to `event` (already recorded or to come). */
  waitFor(event: string): Promise<void> {
    if (this.events.includes(event)) return Promise.resolve();
    return new Promise((resolve) => {
      const on = (e: string): void => {
        if (e !== event) return;
        this.off('event', on);
        resolve();
      };
      this.on('event', on);
    });
  }

  private record(e: string): void {
    this.events.push(e);
    this.emit('event', e);
  }
}

/** How many fds this process has open: a leak shows as a higher count after the same work. */
export function openFdCount(): number {
  return readdirSync('/proc/self/fd').length;
}

/** A new fd on this process's own network namespace (what a pod's would be, for tests that need no root). */
export function ownNetnsFd(): number {
  return openSync('/proc/self/ns/net', 'r');
}
