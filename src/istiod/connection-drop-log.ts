import type { Logger } from 'pino';

/** Peers named in one line; the rest are counted as `otherPeers`, so a flood from many addresses stays one short line. */
const MAX_PEERS_NAMED = 16;

/**
 * The log of connections refused at accept (istiod's 15012 caps). The first refusal is logged at once; those that
 * follow within `intervalMs` are counted and logged together when it ends: how many, from which peers
 * (the busiest MAX_PEERS_NAMED) and why. A flood of connections thus costs one log line per interval, and memory for
 * MAX_PEERS_NAMED peers.
 */
export class ConnectionDropLog {
  private dropped = 0;
  private readonly peers = new Map<string, number>();
  private otherPeers = 0;
  private readonly reasons = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly log: Logger,
    private readonly limits: Readonly<Record<string, number>>,
    private readonly intervalMs: number,
  ) {}

  record(peer: string, reason: string): void {
    this.dropped++;
    this.reasons.set(reason, (this.reasons.get(reason) ?? 0) + 1);
    const n = this.peers.get(peer);
    if (n !== undefined) this.peers.set(peer, n + 1);
    else if (this.peers.size < MAX_PEERS_NAMED) this.peers.set(peer, 1);
    else this.otherPeers++;
    if (this.timer === undefined) this.flush();
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** Logs what was counted, and opens an interval during which refusals are only counted. */
  private readonly flush = (): void => {
    this.timer = undefined;
    if (this.dropped === 0) return;
    const peers = Object.fromEntries([...this.peers].sort((a, b) => b[1] - a[1]));
    this.log.warn(
      {
        dropped: this.dropped,
        peers,
        ...(this.otherPeers > 0 ? { otherPeers: this.otherPeers } : {}),
        reasons: Object.fromEntries(this.reasons),
        ...this.limits,
        intervalMs: this.intervalMs,
      },
      'connection refused: too many connections',
    );
    this.dropped = 0;
    this.otherPeers = 0;
    this.peers.clear();
    this.reasons.clear();
    this.timer = setTimeout(this.flush, this.intervalMs);
    this.timer.unref();
  };
}
