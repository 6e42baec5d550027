/**
 * A rolling update's `maxUnavailable` or `maxSurge` as a number of pods (apimachinery `intstr`
 * `GetScaledValueFromIntOrPercent`): an integer as it is, a percentage of `total` rounded down, or up where the
 * controller asks for that (a Deployment's maxSurge, a DaemonSet's both). Anything else counts as 0.
 */
export function scaledValue(v: number | string | undefined, total: number, roundUp = false): number {
  if (typeof v === 'number') return v;
  const m = /^(\d+)%$/.exec(v ?? '');
  if (m === null) return 0;
  const exact = (Number(m[1]) * total) / 100;
  return roundUp ? Math.ceil(exact) : Math.floor(exact);
}
