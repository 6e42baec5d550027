/**
 * The record of what `amesh up` created outside its own process: network namespaces (every container, probe,
 * CNI plugin, node agent and ztunnel runs inside one of them) and links in the host's namespace. Each entry is
 * appended, synchronously, before the thing is created, so a crash at any point leaves a record that covers it;
 * when the creation fails, nothing was made (a namespace or link of that name may be another's) and a retraction
 * follows it. `amesh down` (`removeRecorded`), and `up`'s own teardown last of all, then kill the processes in each
 * namespace, delete the namespaces and links still there, and remove the record.
 */
import { appendFileSync, readFileSync, readlinkSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import { MeshError } from '../lib/errors.js';
import { ip, runCommand } from './run-command.js';
import { removeCgroup } from './runc-runtime.js';

/** A network namespace, a link in the host's namespace, or the cluster's cgroup (its containers' parent). */
export type Resource =
  | { readonly t: 'netns'; readonly name: string }
  | { readonly t: 'link'; readonly name: string }
  | { readonly t: 'cgroup'; readonly name: string };

export type JournalEntry =
  | { readonly t: 'up'; readonly pid: number; readonly start: string; readonly hostNetns: string }
  | Resource
  /** The creation of `of`, recorded just before, failed: nothing of it was made. */
  | { readonly t: 'not-made'; readonly of: Resource };

/** How long a running `up` has to tear itself down after SIGTERM before `down` kills it. */
const UP_STOP_TIMEOUT_MS = 60_000;

/** The network namespace this process runs in (`net:[inode]`), where `up` made its links. */
export const ownNetns = (): string => readlinkSync('/proc/self/ns/net');
const POLL_MS = 100;

/** A process's start time in clock ticks since boot (/proc/PID/stat field 22): with the pid, names one process for good. */
export function processStart(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${String(pid)}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

export class ResourceJournal {
  private constructor(private readonly file: string) {}

  /** Starts a record for this process; refuses while one from an earlier `up` is left. */
  static async open(file: string): Promise<ResourceJournal> {
    const left = await readJournal(file);
    if (left.length > 0)
      throw new MeshError(
        'UP_ERR_LEFTOVERS',
        `${file} records ${String(left.length)} things an earlier amesh up created and did not remove (it crashed, or still runs): run amesh down with the same --data-dir first`,
      );
    const j = new ResourceJournal(file);
    j.record({ t: 'up', pid: process.pid, start: processStart(process.pid) ?? '', hostNetns: ownNetns() });
    return j;
  }

  /** Appends to the record of the running `up` (a kubelet of its nodes records the pods' namespaces there too). */
  static attach(file: string): ResourceJournal {
    return new ResourceJournal(file);
  }

  private record(e: JournalEntry): void {
    appendFileSync(this.file, JSON.stringify(e) + '\n', { mode: 0o600 });
  }

  /** Records `r`, then runs `make`, the one command that creates it; when that fails, retracts the record. */
  async create(r: Resource, make: () => Promise<unknown>): Promise<void> {
    this.record(r);
    try {
      await make();
    } catch (e) {
      this.record({ t: 'not-made', of: r });
      throw e;
    }
  }

  /** Removes what the record still names and is still there (what a failed step left), then the record. */
  close(): Promise<string[]> {
    return removeRecorded(this.file);
  }
}

/** The entries of the record at `file` (none when there is none), retracted creations left out. */
export async function readJournal(file: string): Promise<JournalEntry[]> {
  const text = await readFile(file, 'utf8').catch(() => '');
  const entries: JournalEntry[] = [];
  // A line cut short by a crash is the last one, and names something not yet created.
  for (const l of text.split('\n')) {
    let e: JournalEntry;
    try {
      if (l === '') continue;
      e = JSON.parse(l) as JournalEntry;
    } catch {
      continue;
    }
    if (e.t !== 'not-made') {
      entries.push(e);
      continue;
    }
    const { of } = e;
    const at = entries.findLastIndex((x) => x.t === of.t && x.name === of.name);
    if (at >= 0) entries.splice(at, 1);
  }
  return entries;
}

const alive = (pid: number, start: string): boolean => processStart(pid) === start;

/** Deletes a network namespace and first kills every process in it. Gone already is fine. */
export async function deleteNetns(name: string): Promise<void> {
  const pids = await runCommand('ip', ['netns', 'pids', name]);
  if (pids.code !== 0) return;
  for (const p of pids.stdout.split('\n').filter((x) => x !== '')) {
    try {
      process.kill(Number(p), 'SIGKILL');
    } catch {
      // exited meanwhile
    }
  }
  await ip('netns', 'del', name);
}

/**
 * Deletes a link in this namespace. Gone already is fine: deleting a namespace destroys the veths with an end in
 * it, the host end too, though the kernel may do it only after `ip netns del` returned.
 */
export async function deleteLink(name: string): Promise<void> {
  const del = await runCommand('ip', ['link', 'del', name]);
  if (del.code !== 0 && !del.stderr.includes('Cannot find device'))
    throw new MeshError('UP_ERR_NETWORK', `ip link del ${name} failed: ${del.stderr.trim()}`);
}

/**
 * Removes everything the journal records: a still-running `up` is asked to stop (SIGTERM) and waited for, then
 * what is left is removed. Returns what was removed, for the caller to report.
 */
export async function removeRecorded(file: string): Promise<string[]> {
  const entries = await readJournal(file);
  const removed: string[] = [];
  const host = entries.find((e) => e.t === 'up');
  if (host !== undefined && host.hostNetns !== ownNetns())
    throw new MeshError(
      'UP_ERR_NETWORK',
      `amesh up ran in network namespace ${host.hostNetns}, this is ${ownNetns()}: its links are only visible there; run amesh down in that namespace (e.g. ip netns exec NAME amesh down)`,
    );
  for (const e of entries) {
    if (e.t !== 'up' || e.pid === process.pid || !alive(e.pid, e.start)) continue;
    process.kill(e.pid, 'SIGTERM');
    const deadline = Date.now() + UP_STOP_TIMEOUT_MS;
    while (alive(e.pid, e.start) && Date.now() < deadline) await new Promise((r) => setTimeout(r, POLL_MS));
    if (alive(e.pid, e.start)) process.kill(e.pid, 'SIGKILL');
    removed.push(`process ${String(e.pid)} (amesh up)`);
  }
  for (const e of [...entries].reverse()) {
    if (e.t === 'netns' && (await runCommand('ip', ['netns', 'pids', e.name])).code === 0) {
      await deleteNetns(e.name);
      removed.push(`netns ${e.name}`);
    } else if (e.t === 'link' && (await runCommand('ip', ['link', 'show', e.name])).code === 0) {
      await deleteLink(e.name);
      removed.push(`link ${e.name}`);
    } else if (e.t === 'cgroup') {
      if ((await removeCgroup(e.name)).length > 0) removed.push(`cgroup ${e.name}`);
    }
  }
  await rm(file, { force: true });
  return removed;
}
