/** RFC 3339 in whole seconds, as Kubernetes serialises metav1.Time (creation and deletion timestamps, conditions). */
export function kubeTime(ms: number = Date.now()): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** RFC 3339 to the microsecond, as Kubernetes serialises metav1.MicroTime (a Lease's renewTime, an Event's eventTime). */
export function kubeMicroTime(ms: number = Date.now()): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}
