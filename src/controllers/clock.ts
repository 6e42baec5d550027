/**
 * The time a controller reads and the timers it sets (k8s.io/utils `clock`, which kube-controller-manager hands the
 * Job and CronJob controllers), injected so that tests move time on instead of waiting for deadlines and schedules.
 */
export interface Clock {
  now(): number;
  /** Calls `fn` once `ms` have passed on this clock; the function returned cancels it. */
  setTimer(ms: number, fn: () => void): () => void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimer: (ms, fn) => {
    const t = setTimeout(fn, ms);
    return () => clearTimeout(t);
  },
};
