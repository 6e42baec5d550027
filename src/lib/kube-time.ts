/** RFC 3339 in whole seconds, as Kubernetes serialises metav1.Time (creation and deletion timestamps, conditions). */
export function kubeTime(ms: number = Date.now()): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}
