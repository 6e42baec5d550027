/**
 * What a controller is still waiting to see (k8s.io/kubernetes `pkg/controller/controller_utils.go`
 * ControllerExpectations): after creating or deleting pods for an owner, its informer lags behind the API, so the
 * owner is not reconciled again until every create and delete has been observed, or until EXPECTATIONS_TIMEOUT_MS
 * has passed (a lost event must not stall the owner for ever). Without this, a reconcile between a create and its
 * event would create the pod again.
 */

/** client-go's ExpectationsTimeout. */
export const EXPECTATIONS_TIMEOUT_MS = 5 * 60_000;

interface Pending {
  adds: number;
  deletes: number;
  since: number;
}

export class Expectations {
  private readonly pending = new Map<string, Pending>();

  constructor(private readonly now: () => number = Date.now) {}

  /** Records that `adds` creations and `deletes` deletions are on their way for `key`. */
  expect(key: string, adds: number, deletes: number): void {
    this.pending.set(key, { adds, deletes, since: this.now() });
  }

  /** One creation for `key` was seen (or will never come: its request failed). */
  observedAdd(key: string): void {
    const p = this.pending.get(key);
    if (p !== undefined && p.adds > 0) p.adds--;
  }

  /** One deletion for `key` was seen (or will never come). */
  observedDelete(key: string): void {
    const p = this.pending.get(key);
    if (p !== undefined && p.deletes > 0) p.deletes--;
  }

  /** True when `key` may be reconciled: nothing pending, or what is pending has waited too long. */
  satisfied(key: string): boolean {
    const p = this.pending.get(key);
    return p === undefined || (p.adds <= 0 && p.deletes <= 0) || this.now() - p.since > EXPECTATIONS_TIMEOUT_MS;
  }

  forget(key: string): void {
    this.pending.delete(key);
  }
}
