import { KubeConfig, type Cluster } from '@kubernetes/client-node';

/**
 * A kubeconfig (JSON, which is YAML) for `cluster` as user `userName`, whose token client-go and loadKubeConfig read
 * from `tokenFile`, as a service-account client's kubeconfig names its projected token.
 */
export function tokenFileKubeconfig(cluster: Cluster, userName: string, tokenFile: string): string {
  const kc = new KubeConfig();
  const context = `${userName}@${cluster.name}`;
  kc.loadFromOptions({
    clusters: [cluster],
    users: [{ name: userName }],
    contexts: [{ name: context, cluster: cluster.name, user: userName }],
    currentContext: context,
  });
  const doc = JSON.parse(kc.exportConfig()) as { users: { user: Record<string, unknown> }[] };
  for (const u of doc.users) u.user = { tokenFile };
  return JSON.stringify(doc, null, 2);
}
