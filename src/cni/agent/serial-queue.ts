/**
 * Runs async tasks one after another per key, in call order: a read-then-write on shared state (a pod's iptables,
 * the node's ipsets) never overlaps another on the same key. A task's failure is its caller's; the next task runs
 * anyway. Keys with nothing queued are forgotten.
 */
export class SerialQueue {
  private readonly tails = new Map<string, Promise<unknown>>();

  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const before = this.tails.get(key) ?? Promise.resolve();
    const result = before.then(task);
    const tail = result.catch(() => undefined);
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return result;
  }
}
