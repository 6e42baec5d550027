/**
 * The directories each node of `amesh up` has to itself. kind's nodes are containers, each with its own root
 * filesystem; amesh up's nodes share the host's. A DaemonSet that writes into the node, as istio-cni does (its
 * plugin into /opt/cni/bin, its chained conflist into /etc/cni/net.d, its sockets under /var/run/istio-cni and
 * /var/run/ztunnel, in istio manifests/charts/istio-cni/templates/daemonset.yaml), would otherwise have every
 * node's pod write the same host files. So a hostPath under one of the node directories below resolves inside the
 * node's own root directory, and the kubelet reads its CNI configuration and plugins from there too; any other
 * hostPath (the pods' network namespaces in /run/netns, /proc, a test's directory) is the host's, shared by the
 * nodes as the kernel is.
 */
import path from 'node:path';

/**
 * The node's own directories: CNI configuration and plugins, kubelet's and kubeadm's, and the run directories of
 * the node agents Istio's charts mount. `/var/run` is Debian's link to `/run`: both spellings name one directory.
 */
const NODE_DIRS = [
  '/etc/cni',
  '/opt/cni',
  '/etc/kubernetes',
  '/var/lib/kubelet',
  '/var/log/pods',
  '/run/istio-cni',
  '/run/ztunnel',
] as const;

/** `p` with `/var/run` spelled `/run`, normalised. */
const canonical = (p: string): string => {
  const n = path.posix.normalize(p);
  return n === '/var/run' || n.startsWith('/var/run/') ? n.slice('/var'.length) : n;
};

const under = (p: string, dir: string): boolean => p === dir || p.startsWith(`${dir}/`);

export class NodeFilesystem {
  /** `root`: the node's root directory, which holds what the node's own directories hold on a real node. */
  constructor(readonly root: string) {}

  /** Where host path `p` (absolute) is for this node's pods and kubelet. */
  hostPath(p: string): string {
    const c = canonical(p);
    return NODE_DIRS.some((d) => under(c, d)) ? path.join(this.root, c) : p;
  }
}
