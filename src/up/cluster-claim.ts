/**
 * One running `amesh up` per network namespace and per cluster name. Two clusters in one network namespace would
 * share the bridge address, its ports and the pod routes; two of one name would share the node namespaces
 * (`<name>-node<N>`, visible from every network namespace). Before it touches anything, `up` claims both with a
 * file each under CLAIM_DIR (a tmpfs, emptied at boot), created exclusively and naming its pid and data dir; a
 * second `up` finds the claim and names the running one. A claim whose `up` is gone is taken over, unless that
 * `up` left things behind, which `amesh down` must remove first.
 */
import { mkdir, readdir, readFile, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { MeshError } from '../lib/errors.js';
import { ownNetns, processStart, readJournal } from './resource-journal.js';
import type { UpConfig } from './up-config.js';
import { UpDataDir } from './up-data-dir.js';

export const CLAIM_DIR = '/run/amesh/up';

/** The `up` holding a claim. */
interface Holder {
  readonly pid: number;
  readonly start: string;
  readonly dataDir: string;
  readonly name: string;
  readonly hostNetns: string;
}

/** What a claim keeps apart: the network namespace (`net:[inode]`) and the cluster name. */
const claimFiles = (dir: string, hostNetns: string, name: string): { file: string; clash: string }[] => [
  {
    file: path.join(dir, `netns-${hostNetns.replace(/\D/g, '')}.json`),
    clash:
      'in this network namespace (two clusters here would share the bridge address, its ports and the pod routes): stop it, or run this one in another network namespace',
  },
  {
    file: path.join(dir, `name-${name}.json`),
    clash: `named ${name} (its node namespaces ${name}-node<N> would be this one's): stop it, or give this one another --name`,
  },
];

async function readHolder(file: string): Promise<Holder | undefined> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as Holder;
  } catch {
    // Gone meanwhile, or cut short by a crash while it was written: nobody holds it.
    return undefined;
  }
}

const running = (h: Holder): boolean => processStart(h.pid) === h.start;

export class ClusterClaim {
  private constructor(private readonly files: readonly string[]) {}

  /** Claims `cfg`'s network namespace and name for this process, or throws naming the `up` that holds them. */
  static async take(cfg: UpConfig, dir = CLAIM_DIR): Promise<ClusterClaim> {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const me: Holder = {
      pid: process.pid,
      start: processStart(process.pid) ?? '',
      dataDir: cfg.dataDir,
      name: cfg.name,
      hostNetns: ownNetns(),
    };
    const taken: string[] = [];
    try {
      for (const { file, clash } of claimFiles(dir, me.hostNetns, me.name)) {
        await claimFile(file, me, clash);
        taken.push(file);
      }
    } catch (e) {
      await new ClusterClaim(taken).release();
      throw e;
    }
    return new ClusterClaim(taken);
  }

  async release(): Promise<void> {
    for (const f of this.files) await unlink(f).catch(() => undefined);
  }
}

async function claimFile(file: string, me: Holder, clash: string): Promise<void> {
  for (;;) {
    try {
      await writeFile(file, JSON.stringify(me), { flag: 'wx', mode: 0o600 });
      return;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    const h = await readHolder(file);
    if (h !== undefined && running(h))
      throw new MeshError(
        'UP_ERR_RUNNING',
        `a cluster is already running ${clash}: amesh up (pid ${String(h.pid)}, cluster ${h.name}) with --data-dir ${h.dataDir}; amesh down --data-dir ${h.dataDir} stops it`,
      );
    if (h !== undefined && (await readJournal(new UpDataDir(h.dataDir).journal)).length > 0)
      throw new MeshError(
        'UP_ERR_LEFTOVERS',
        `amesh up (pid ${String(h.pid)}, cluster ${h.name}) with --data-dir ${h.dataDir} ended without removing what it made, which would meet this cluster's: run amesh down --data-dir ${h.dataDir} first`,
      );
    await unlink(file).catch(() => undefined);
  }
}

/** Removes the claims of the ended `up` that used `dataDir` (`amesh down`, once it removed what that `up` left). */
export async function releaseEndedClaims(dataDir: string, dir = CLAIM_DIR): Promise<void> {
  for (const f of await readdir(dir).catch(() => [])) {
    const file = path.join(dir, f);
    const h = await readHolder(file);
    if (h !== undefined && h.dataDir === dataDir && !running(h)) await unlink(file).catch(() => undefined);
  }
}
