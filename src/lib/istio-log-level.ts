/** Istio's `--log_output_level` (`default:info,ads:debug`) as amesh's `--log-level` (`info,ads=debug`). */
export function ameshLogLevel(istioLevels: string): string {
  return istioLevels
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
    .map((part) => {
      const colon = part.lastIndexOf(':');
      const scope = colon < 0 ? 'default' : part.slice(0, colon);
      const raw = part.slice(colon + 1);
      const level = raw === 'none' ? 'silent' : raw;
      return scope === 'default' ? level : `${scope}=${level}`;
    })
    .join(',');
}
