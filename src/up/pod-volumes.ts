/**
 * A pod's volumes as kubelet's volume manager sets them up, each under the pod's runtime directory (or, for
 * hostPath, the host path itself), for the container runtime to bind-mount at the containers' `mountPath`s:
 * - emptyDir: an empty directory (mode 0777) that lives as long as the pod;
 * - hostPath: the host's path (or the node's own, node-filesystem.ts), with the `type` checks and the `...OrCreate` creation of pkg/volume/hostpath;
 * - configMap, secret, downwardAPI and projected: files written by atomic-writer.ts with `items`, `defaultMode`
 *   and `optional` as pkg/volume/{configmap,secret,downwardapi,projected} read them, rewritten when their sources
 *   change;
 * - a projected `serviceAccountToken`: a TokenRequest bound to the pod, for its audience and expirationSeconds,
 *   requested again once 80% of its lifetime has passed (pkg/kubelet/token/token_manager.go).
 * Any other volume type fails with kubelet's FailedMount message naming it. The files are kept on the node's disk
 * under a root-only directory; kubelet puts secrets on tmpfs, which amesh up does not mount.
 */
import type { Stats } from 'node:fs';
import { chmod, lstat, mkdir, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type {
  V1Container,
  V1KeyToPath,
  V1Pod,
  V1ServiceAccountTokenProjection,
  V1Volume,
  V1VolumeMount,
} from '@kubernetes/client-node';
import type { Clock } from '../controllers/clock.js';
import { describeError, MeshError } from '../lib/errors.js';
import type { Logger } from '../lib/log.js';
import { writePayload, type PayloadFile } from './atomic-writer.js';
import { podFieldValue, resourceFieldValue, type PodAddresses } from './downward-api.js';
import type { KubeletSources, SourceKind } from './kubelet-sources.js';
import type { ContainerMount } from './oci-spec.js';

/** The mode of configMap, secret, downwardAPI and projected files when the volume sets none (0644). */
const DEFAULT_MODE = 0o644;
/** A projected token's lifetime when the source sets none (SetDefaults_ServiceAccountTokenProjection). */
const DEFAULT_TOKEN_SECONDS = 3600;
/** The token is requested again once this share of its lifetime has passed. */
const TOKEN_REFRESH_AT = 0.8;

/** A TokenRequest for a projected token, bound to the pod. */
export interface TokenRequestFor {
  readonly namespace: string;
  readonly serviceAccount: string;
  readonly audience: string | undefined;
  readonly expirationSeconds: number;
  readonly pod: { readonly name: string; readonly uid: string };
}

export interface PodVolumesDeps {
  readonly sources: Pick<KubeletSources, 'configMap' | 'secret'>;
  readonly requestToken: (r: TokenRequestFor) => Promise<string>;
  /** Where a hostPath is on this node (node-filesystem.ts). */
  readonly hostPath: (p: string) => string;
  readonly clock: Clock;
  readonly log: Logger;
}

/** kubelet's FailedMount message for one volume. */
export class VolumeSetupError extends MeshError {
  constructor(volume: string, why: string) {
    super('UP_ERR_VOLUME', `MountVolume.SetUp failed for volume "${volume}" : ${why}`);
  }
}

const fail = (v: V1Volume, why: string): never => {
  throw new VolumeSetupError(v.name, why);
};

function hostPathTypeError(p: string, type: string, st: Stats | undefined): string | undefined {
  const want: Readonly<Record<string, [(s: Stats) => boolean, string]>> = {
    Directory: [(s) => s.isDirectory(), 'a directory'],
    File: [(s) => s.isFile(), 'a file'],
    Socket: [(s) => s.isSocket(), 'a socket file'],
    CharDevice: [(s) => s.isCharacterDevice(), 'a character device'],
    BlockDevice: [(s) => s.isBlockDevice(), 'a block device'],
  };
  const w = want[type];
  if (w === undefined) return undefined;
  if (st === undefined || !w[0](st)) return `hostPath type check failed: ${p} is not ${w[1]}`;
  return undefined;
}

/** The volume kinds this kubelet sets up, and the one `v` is (undefined: another). */
const KINDS = ['emptyDir', 'hostPath', 'configMap', 'secret', 'downwardAPI', 'projected'] as const;
const kindOf = (v: V1Volume): (typeof KINDS)[number] | undefined =>
  KINDS.find((k) => v[k] !== undefined && v[k] !== null);

/** The source fields a volume may name that are not among KINDS, for the error. */
const typeName = (v: V1Volume): string =>
  Object.keys(v).find((k) => k !== 'name' && v[k as keyof V1Volume] !== undefined) ?? 'an empty';

export class PodVolumes {
  private readonly paths = new Map<string, string>();
  private readonly cancelRefresh = new Map<string, () => void>();
  private stopped = false;

  constructor(
    private pod: V1Pod,
    private readonly dir: string,
    private readonly at: PodAddresses,
    private readonly d: PodVolumesDeps,
  ) {}

  private get volumes(): readonly V1Volume[] {
    return this.pod.spec?.volumes ?? [];
  }

  /** Sets up every volume; throws VolumeSetupError for the first that fails. */
  async setUp(): Promise<void> {
    for (const v of this.volumes) await this.setUpOne(v);
  }

  private async setUpOne(v: V1Volume): Promise<void> {
    const kind = kindOf(v);
    if (kind === undefined)
      fail(
        v,
        `amesh up has no volume plugin for ${typeName(v)} volume (it sets up emptyDir, hostPath, configMap, secret, downwardAPI and projected volumes)`,
      );
    if (kind === 'hostPath') {
      this.paths.set(v.name, await this.hostPath(v));
      return;
    }
    const dir = path.join(this.dir, v.name);
    this.paths.set(v.name, dir);
    if (kind === 'emptyDir') {
      await mkdir(dir, { recursive: true });
      await chmod(dir, 0o777);
      return;
    }
    await this.writeFiles(v, dir);
  }

  private async hostPath(v: V1Volume): Promise<string> {
    const named = v.hostPath!.path;
    const type = v.hostPath!.type ?? '';
    if (!path.isAbsolute(named)) fail(v, `hostPath ${named} is not an absolute path`);
    const p = this.d.hostPath(named);
    let st = await stat(p).catch(() => undefined);
    if (st === undefined && type === 'DirectoryOrCreate') {
      await mkdir(p, { recursive: true, mode: 0o755 });
      st = await stat(p);
    } else if (st === undefined && type === 'FileOrCreate') {
      await mkdir(path.dirname(p), { recursive: true, mode: 0o755 });
      await writeFile(p, '', { mode: 0o644, flag: 'a' });
      st = await stat(p);
    }
    const orCreate = { DirectoryOrCreate: 'Directory', FileOrCreate: 'File' } as Readonly<Record<string, string>>;
    const why = hostPathTypeError(named, orCreate[type] ?? type, st);
    if (why !== undefined) fail(v, why);
    if (st === undefined && type === '' && (await lstat(p).catch(() => undefined)) === undefined)
      // An unchecked path that is not there is made a directory, as containerd's CRI makes a missing mount source.
      await mkdir(p, { recursive: true, mode: 0o755 });
    return p;
  }

  /** The files of a configMap, secret, downwardAPI or projected volume, written; a projected token's refresh set. */
  private async writeFiles(v: V1Volume, dir: string): Promise<void> {
    const files = new Map<string, PayloadFile>();
    let refreshAt: number | undefined;
    const mode = (m: number | undefined, dflt: number | undefined): number => m ?? dflt ?? DEFAULT_MODE;
    if (v.configMap !== undefined)
      this.keyed(v, 'ConfigMap', v.configMap.name ?? '', v.configMap, files, v.configMap.defaultMode);
    else if (v.secret !== undefined)
      this.keyed(v, 'Secret', v.secret.secretName ?? '', v.secret, files, v.secret.defaultMode);
    else if (v.downwardAPI !== undefined) {
      for (const item of v.downwardAPI.items ?? [])
        files.set(item.path, this.downwardFile(v, item, mode(item.mode, v.downwardAPI.defaultMode)));
    } else {
      const dflt = v.projected?.defaultMode;
      for (const s of v.projected?.sources ?? []) {
        if (s.configMap !== undefined) this.keyed(v, 'ConfigMap', s.configMap.name ?? '', s.configMap, files, dflt);
        if (s.secret !== undefined) this.keyed(v, 'Secret', s.secret.name ?? '', s.secret, files, dflt);
        for (const item of s.downwardAPI?.items ?? [])
          files.set(item.path, this.downwardFile(v, item, mode(item.mode, dflt)));
        if (s.serviceAccountToken !== undefined) {
          const t = await this.token(v, s.serviceAccountToken);
          files.set(s.serviceAccountToken.path, { data: Buffer.from(t.token), mode: mode(undefined, dflt) });
          refreshAt = Math.min(refreshAt ?? Infinity, t.refreshAt);
        }
      }
    }
    await writePayload(dir, files, new Date(this.d.clock.now()));
    if (refreshAt !== undefined) this.scheduleRefresh(v, refreshAt);
  }

  private keyed(
    v: V1Volume,
    kind: SourceKind,
    name: string,
    src: { items?: V1KeyToPath[]; optional?: boolean },
    files: Map<string, PayloadFile>,
    defaultMode: number | undefined,
  ): void {
    const ns = this.pod.metadata?.namespace ?? '';
    const obj = kind === 'ConfigMap' ? this.d.sources.configMap(ns, name) : this.d.sources.secret(ns, name);
    const lower = kind === 'ConfigMap' ? 'configmap' : 'secret';
    if (obj === undefined) {
      if (src.optional === true) return;
      fail(v, `${lower} "${name}" not found`);
    }
    const data = new Map<string, Buffer>();
    const o = obj as { data?: Record<string, string>; binaryData?: Record<string, string> };
    for (const [k, val] of Object.entries(o.data ?? {}))
      data.set(k, kind === 'Secret' ? Buffer.from(val, 'base64') : Buffer.from(val));
    for (const [k, val] of Object.entries(o.binaryData ?? {})) data.set(k, Buffer.from(val, 'base64'));
    const items: V1KeyToPath[] = src.items ?? [...data.keys()].map((key) => ({ key, path: key }));
    for (const item of items) {
      const bytes = data.get(item.key);
      if (bytes === undefined) {
        if (src.optional === true) continue;
        fail(v, `${lower} references non-existent ${kind === 'ConfigMap' ? 'config' : 'secret'} key: ${item.key}`);
      }
      files.set(item.path, { data: bytes!, mode: item.mode ?? defaultMode ?? DEFAULT_MODE });
    }
  }

  private downwardFile(
    v: V1Volume,
    item: {
      fieldRef?: { fieldPath: string };
      resourceFieldRef?: { containerName?: string; resource: string; divisor?: unknown };
    },
    mode: number,
  ): PayloadFile {
    let value: string | undefined;
    if (item.fieldRef !== undefined) value = podFieldValue(this.pod, item.fieldRef, this.at);
    else if (item.resourceFieldRef !== undefined)
      value = resourceFieldValue(
        this.pod,
        undefined,
        item.resourceFieldRef as Parameters<typeof resourceFieldValue>[2],
      );
    if (value === undefined)
      fail(v, `unsupported downward API field ${JSON.stringify(item.fieldRef ?? item.resourceFieldRef)}`);
    return { data: Buffer.from(value!), mode };
  }

  private async token(v: V1Volume, s: V1ServiceAccountTokenProjection): Promise<{ token: string; refreshAt: number }> {
    const seconds = s.expirationSeconds ?? DEFAULT_TOKEN_SECONDS;
    const { name = '', namespace = '', uid = '' } = this.pod.metadata ?? {};
    // The token's lifetime counts from its request, on this kubelet's clock.
    const issued = this.d.clock.now();
    try {
      const token = await this.d.requestToken({
        namespace,
        serviceAccount: this.pod.spec?.serviceAccountName ?? 'default',
        audience: s.audience === '' ? undefined : s.audience,
        expirationSeconds: seconds,
        pod: { name, uid },
      });
      return { token, refreshAt: issued + seconds * 1000 * TOKEN_REFRESH_AT };
    } catch (e) {
      return fail(v, `failed to fetch token: ${describeError(e)}`);
    }
  }

  private scheduleRefresh(v: V1Volume, at: number): void {
    this.cancelRefresh.get(v.name)?.();
    if (this.stopped) return;
    const cancel = this.d.clock.setTimer(Math.max(0, at - this.d.clock.now()), () => {
      this.cancelRefresh.delete(v.name);
      void this.rewrite(v);
    });
    this.cancelRefresh.set(v.name, cancel);
  }

  private async rewrite(v: V1Volume): Promise<void> {
    if (this.stopped) return;
    try {
      await this.writeFiles(v, path.join(this.dir, v.name));
    } catch (e) {
      this.d.log.warn({ volume: v.name, error: describeError(e) }, 'cannot update volume');
    }
  }

  /**
   * A newer pod (labels and annotations feed downwardAPI files), or a change of ConfigMap or Secret `source`:
   * rewrites the volumes that read it.
   */
  async refresh(pod: V1Pod, source?: { kind: SourceKind; name: string }): Promise<void> {
    this.pod = pod;
    for (const v of this.volumes) {
      if (!this.paths.has(v.name) || (kindOf(v) ?? 'emptyDir') === 'emptyDir' || v.hostPath !== undefined) continue;
      if (source === undefined ? !readsPod(v) : !readsSource(v, source)) continue;
      await this.rewrite(v);
    }
  }

  /** The bind mounts of container `c`'s volumeMounts (a `subPath` below its volume). */
  mounts(c: V1Container): ContainerMount[] {
    return (c.volumeMounts ?? []).map((m: V1VolumeMount) => {
      const base = this.paths.get(m.name);
      if (base === undefined)
        throw new MeshError(
          'UP_ERR_VOLUME',
          `container ${c.name} mounts volume "${m.name}", which the pod does not have`,
        );
      const sub = m.subPath ?? '';
      if (sub.split('/').includes('..'))
        throw new MeshError('UP_ERR_VOLUME', `container ${c.name}: subPath "${sub}" must not contain '..'`);
      return {
        destination: m.mountPath,
        source: sub === '' ? base : path.join(base, sub),
        readOnly: m.readOnly === true,
        propagation: m.mountPropagation as ContainerMount['propagation'],
      };
    });
  }

  /** Stops the token refreshes. */
  stop(): void {
    this.stopped = true;
    for (const c of this.cancelRefresh.values()) c();
    this.cancelRefresh.clear();
  }
}

function readsPod(v: V1Volume): boolean {
  return v.downwardAPI !== undefined || (v.projected?.sources ?? []).some((s) => s.downwardAPI !== undefined);
}

function readsSource(v: V1Volume, src: { kind: SourceKind; name: string }): boolean {
  if (src.kind === 'ConfigMap')
    return v.configMap?.name === src.name || (v.projected?.sources ?? []).some((s) => s.configMap?.name === src.name);
  return v.secret?.secretName === src.name || (v.projected?.sources ?? []).some((s) => s.secret?.name === src.name);
}
