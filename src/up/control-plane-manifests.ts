/**
 * The control plane of `amesh up` as kubeadm lays it out (kubernetes cmd/kubeadm/app/phases/controlplane/
 * manifests.go): static pods of the control-plane node, `kube-system/kube-apiserver`, `kube-controller-manager`
 * and `kube-scheduler`, labelled `component: <name>` and `tier: control-plane`, on the node's network, each a
 * process of the `amesh` image that the node's kubelet runs and restarts. The API server listens on the node's
 * address, keeps its store under a hostPath, and has kubeadm's probes (`/livez` and `/readyz` over HTTPS on its
 * own address, its startup probe every second); the controller-manager and the scheduler reach it through its
 * admin kubeconfig, mounted as kubeadm mounts `controller-manager.conf` and `scheduler.conf`. They serve no health
 * port, so they have no probes.
 */
import path from 'node:path';
import type { V1Container, V1Pod, V1Probe, V1Volume, V1VolumeMount } from '@kubernetes/client-node';
import { packageRoot } from '../lib/package-root.js';
import { ameshCommand } from './amesh-command.js';

/** kube-apiserver's secure port. */
export const APISERVER_PORT = 6443;

export interface ControlPlaneOptions {
  /** The control-plane node's address, where the API server listens. */
  readonly nodeIp: string;
  /** The API server's data directory: its store, credentials and admin kubeconfig. */
  readonly apiserverDir: string;
  readonly serviceCidr: string;
  readonly logLevel: string;
}

const apiProbe = (nodeIp: string, p: string, o: Omit<V1Probe, 'httpGet'>): V1Probe => ({
  httpGet: { host: nodeIp, path: p, port: APISERVER_PORT, scheme: 'HTTPS' },
  timeoutSeconds: 15,
  ...o,
});

function staticPod(name: string, container: V1Container, volumes: readonly V1Volume[]): V1Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'kube-system', labels: { component: name, tier: 'control-plane' } },
    spec: {
      hostNetwork: true,
      priorityClassName: 'system-node-critical',
      containers: [Object.assign(container, { name, image: 'amesh', workingDir: packageRoot() })],
      volumes: [...volumes],
    },
  };
}

/** The three control-plane pods, in the order they are written to the manifest directory. */
export function controlPlanePods(o: ControlPlaneOptions): V1Pod[] {
  const { cmd, args } = ameshCommand();
  const amesh = (...a: string[]): string[] => [cmd, ...args, ...a, '--log-level', o.logLevel];
  const data: { volume: V1Volume; mount: V1VolumeMount } = {
    volume: { name: 'apiserver-data', hostPath: { path: o.apiserverDir, type: 'DirectoryOrCreate' } },
    mount: { name: 'apiserver-data', mountPath: o.apiserverDir },
  };
  const kubeconfig = path.join(o.apiserverDir, 'kubeconfig');
  const kubeconfigVolume: { volume: V1Volume; mount: V1VolumeMount } = {
    volume: { name: 'kubeconfig', hostPath: { path: kubeconfig, type: 'File' } },
    mount: { name: 'kubeconfig', mountPath: kubeconfig, readOnly: true },
  };
  const client = (name: 'kube-controller-manager' | 'kube-scheduler', command: string): V1Pod =>
    staticPod(
      name,
      { name, command: amesh(command, '--kubeconfig', kubeconfig), volumeMounts: [kubeconfigVolume.mount] },
      [kubeconfigVolume.volume],
    );
  return [
    staticPod(
      'kube-apiserver',
      {
        name: 'kube-apiserver',
        command: amesh(
          'apiserver',
          '--data-dir',
          o.apiserverDir,
          '--listen',
          `${o.nodeIp}:${String(APISERVER_PORT)}`,
          '--service-cidr',
          o.serviceCidr,
        ),
        ports: [{ name: 'probe-port', containerPort: APISERVER_PORT, protocol: 'TCP' }],
        // kubeadm's 240 s to start, probed every second rather than every 10 s after 10 s: the pod is Ready
        // (and `up` done waiting) as soon as the server is.
        startupProbe: apiProbe(o.nodeIp, '/livez', { periodSeconds: 1, failureThreshold: 240 }),
        livenessProbe: apiProbe(o.nodeIp, '/livez', {
          initialDelaySeconds: 10,
          periodSeconds: 10,
          failureThreshold: 8,
        }),
        readinessProbe: apiProbe(o.nodeIp, '/readyz', { periodSeconds: 1, failureThreshold: 3 }),
        volumeMounts: [data.mount],
      },
      [data.volume],
    ),
    client('kube-controller-manager', 'controller-manager'),
    client('kube-scheduler', 'scheduler'),
  ];
}
