/**
 * Whether a netns path is the network namespace this process runs in, i.e. the node's own: the reference skeleton
 * refuses such a CNI_NETNS (containernetworking/cni pkg/ns/ns_linux.go CheckNetNS, pkg/skel/skel.go), and for a
 * capturing plugin it matters more, since capturing it would redirect the node's traffic. Namespaces are compared by
 * device and inode, and a path that is not there (a DEL after the pod's netns went) is not ours.
 */
import { statSync } from 'node:fs';

export function isOwnNetns(netnsPath: string): boolean {
  const theirs = statSync(netnsPath, { throwIfNoEntry: false });
  const ours = statSync('/proc/self/ns/net', { throwIfNoEntry: false });
  return theirs !== undefined && ours !== undefined && theirs.dev === ours.dev && theirs.ino === ours.ino;
}
