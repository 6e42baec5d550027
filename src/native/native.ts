/**
 * The typed face of amesh's N-API addon (`native/`). It is hand-written C++ because Node has no API for these
 * syscalls: `setns` (a socket inside a pod's network namespace), `SO_MARK`, `IP_TRANSPARENT`, `SO_ORIGINAL_DST`,
 * and `AF_UNIX` `SOCK_SEQPACKET` with `SCM_RIGHTS` (ZDS). This module is the only one that loads the addon and
 * turns its fds into Node's own objects: `net.Server`, `net.Socket`, `dgram.Socket` (and, through
 * `seqpacket-socket.ts`, `SeqpacketSocket`).
 *
 * A network namespace (`NetnsRef`) is named by a path (`/var/run/netns/NAME`, `/proc/PID/ns/net`) or by an open
 * fd on one, such as the fd ZDS hands over with a pod; an fd stays the caller's. Every fd the addon makes is
 * close-on-exec and non-blocking. Syscall failures are Node-style system errors (`code` is the errno name, e.g.
 * `EADDRINUSE`, plus `errno` and `syscall`); failing to enter the namespace is `AMESH_ERR_NETNS`. The addon
 * loads at first use, so code that never calls it runs without it.
 */
import { createRequire } from 'node:module';
import { closeSync } from 'node:fs';
import path from 'node:path';
import net from 'node:net';
import dgram from 'node:dgram';
import { once } from 'node:events';
import { MeshError } from '../lib/errors.js';
import { packageRoot } from '../lib/package-root.js';

/** A network namespace: a path to its nsfs file, or an open fd on it that the caller keeps. */
export type NetnsRef = string | number;

/** A network namespace's identity: the same whichever path or fd reaches it. */
export interface NetnsId {
  dev: bigint;
  ino: bigint;
}

/** Options for a socket that ztunnel makes inside a pod. */
export interface PodSocketOptions {
  /** `IP_TRANSPARENT` / `IPV6_TRANSPARENT`: bind to, or accept for, addresses that are not local. */
  transparent?: boolean;
  /** `SO_MARK`, e.g. ztunnel's 0x539, so the pod's iptables rules let the socket's packets through uncaptured. */
  mark?: number;
}

/** Options for an outgoing socket that ztunnel makes inside a pod. */
export interface PodConnectOptions extends PodSocketOptions {
  /** `IP_FREEBIND` / `IPV6_FREEBIND`: with `transparent`, `connect({ localAddress })` may bind any address. */
  freebind?: boolean;
}

export interface PodBindOptions extends PodSocketOptions {
  /** An IPv4 or IPv6 address; an IPv6 socket is IPv6-only, so both families can bind one port. */
  host: string;
  port: number;
  /** `SO_REUSEPORT`, so a new ztunnel can bind beside the old one and take over (default true). */
  reusePort?: boolean;
}

export interface PodListenOptions extends PodBindOptions {
  /** Default 511, Node's. */
  backlog?: number;
}

export interface OriginalDst {
  address: string;
  port: number;
  family: 4 | 6;
}

/** Watches a non-blocking fd on Node's event loop (a libuv poll); never closes the fd. */
export interface FdWatcher {
  /** What to wait for; both false stops watching (and lets the process exit). */
  watch(readable: boolean, writable: boolean): void;
  /** Stops for good; close the fd only after this. */
  close(): void;
}

interface Addon {
  netnsId(netns: NetnsRef): NetnsId;
  tcpListenInNetns(
    netns: NetnsRef,
    host: string,
    port: number,
    options: PodSocketOptions & { reusePort?: boolean; backlog?: number },
  ): number;
  udpBindInNetns(
    netns: NetnsRef,
    host: string,
    port: number,
    options: PodSocketOptions & { reusePort?: boolean },
  ): number;
  tcpSocketInNetns(netns: NetnsRef, family: 4 | 6, options: PodConnectOptions): number;
  tcpSocket(family: 4 | 6): number;
  setMark(fd: number, mark: number): void;
  setTransparent(fd: number): void;
  originalDst(fd: number): OriginalDst;
  seqpacketListen(path: string, backlog: number): number;
  seqpacketConnect(path: string): number;
  seqpacketAccept(fd: number): number | null;
  seqpacketSend(fd: number, data: Buffer, fds: readonly number[]): boolean;
  seqpacketRecv(fd: number): { data: Buffer; fds: number[] } | null;
  FdWatcher: new (fd: number, onEvent: (err: Error | null, readable: boolean, writable: boolean) => void) => FdWatcher;
}

const ADDON_FILE = path.join('native', 'build', 'Release', 'amesh_native.node');
let loaded: Addon | undefined;

/** The addon, from the package root. */
function addon(): Addon {
  if (loaded !== undefined) return loaded;
  const file = path.join(packageRoot(), ADDON_FILE);
  try {
    loaded = createRequire(import.meta.url)(file) as Addon;
  } catch (e) {
    throw new MeshError(
      'AMESH_ERR_NATIVE',
      `cannot load the native addon ${file}: ${(e as Error).message} (npm ci builds it)`,
      { cause: e },
    );
  }
  return loaded;
}

/** Runs an addon call that enters `netns`; a failure to open or enter the namespace becomes AMESH_ERR_NETNS. */
function inNetns<T>(netns: NetnsRef, call: (a: Addon) => T): T {
  const a = addon();
  try {
    return call(a);
  } catch (e) {
    const { syscall, code } = e as NodeJS.ErrnoException;
    if (syscall === 'open' || syscall === 'setns') {
      const name = typeof netns === 'number' ? `fd ${netns}` : netns;
      throw new MeshError(
        'AMESH_ERR_NETNS',
        `cannot enter network namespace ${name}: ${code ?? (e as Error).message}`,
        { cause: e },
      );
    }
    throw e;
  }
}

/** The fd under a listening server or an open socket (Node keeps it on the libuv handle). */
function fdOf(owner: net.Socket | net.Server): number {
  const fd = (owner as unknown as { _handle?: { fd?: unknown } | null })._handle?.fd;
  if (typeof fd !== 'number' || fd < 0) throw new TypeError('the socket has no fd: it is not open (yet), or closed');
  return fd;
}

/** Hands a new fd to a Node object; when Node refuses it at once (e.g. a server already listening), closes it. */
function adopt<T>(fd: number, give: () => T): T {
  try {
    return give();
  } catch (e) {
    closeSync(fd);
    throw e;
  }
}

/** The identity `(dev, ino)` of a network namespace; EINVAL when the path or fd is not one. */
export function netnsId(netns: NetnsRef): NetnsId {
  return addon().netnsId(netns);
}

/** True when two identities are the same network namespace. */
export function sameNetns(a: NetnsId, b: NetnsId): boolean {
  return a.dev === b.dev && a.ino === b.ino;
}

/**
 * Makes `server` (a net.Server, or a tls/http server, which are net.Servers) listen on host:port inside `netns`,
 * with SO_REUSEADDR and (unless `reusePort` is false) SO_REUSEPORT, so a new ztunnel can listen beside the old one
 * and take over.
 */
export async function listenInNetns(server: net.Server, netns: NetnsRef, options: PodListenOptions): Promise<void> {
  const { host, port, ...socketOptions } = options;
  const fd = inNetns(netns, (a) => a.tcpListenInNetns(netns, host, port, socketOptions));
  const listening = once(server, 'listening');
  adopt(fd, () => server.listen({ fd }));
  await listening;
}

/**
 * A UDP socket bound to host:port inside `netns` (SO_REUSEPORT unless `reusePort` is false; never SO_REUSEADDR,
 * which for UDP would share the port regardless), e.g. for DNS on 15053.
 */
export async function udpSocketInNetns(netns: NetnsRef, options: PodBindOptions): Promise<dgram.Socket> {
  const { host, port, ...socketOptions } = options;
  const fd = inNetns(netns, (a) => a.udpBindInNetns(netns, host, port, socketOptions));
  const socket = dgram.createSocket(net.isIPv6(host) ? 'udp6' : 'udp4');
  // dgram emits 'listening' for an adopted fd within bind() itself.
  const listening = once(socket, 'listening');
  adopt(fd, () => socket.bind({ fd }));
  await listening;
  return socket;
}

/**
 * An unconnected TCP socket made inside `netns`: call `connect()` on it as on any net.Socket (Node connects an
 * adopted fd, binding `localAddress` first); with `transparent` and `freebind`, `connect({ localAddress })` may
 * bind an address that is not the pod's own. `socket` holds Node's own options for the net.Socket (e.g.
 * `allowHalfOpen`). Its port is chosen at connect, not at that bind (IP_BIND_ADDRESS_NO_PORT): see `tcpSocket`.
 */
export function tcpSocketInNetns(
  netns: NetnsRef,
  family: 4 | 6,
  options: PodConnectOptions = {},
  socket: Omit<net.SocketConstructorOpts, 'fd' | 'handle'> = {},
): net.Socket {
  const fd = inNetns(netns, (a) => a.tcpSocketInNetns(netns, family, options));
  return adopt(fd, () => new net.Socket({ ...socket, fd }));
}

/**
 * An unconnected TCP socket of this process's own netns, for `connect({ localAddress })`: with
 * IP_BIND_ADDRESS_NO_PORT its port is chosen at connect, for the whole 4-tuple. Node's own sockets choose it at
 * the bind before, where a port must be free for every destination; thousands of connections from one address
 * in TIME_WAIT then make each bind slow, and finally impossible, while connect could still reuse those ports.
 */
export function tcpSocket(family: 4 | 6, socket: Omit<net.SocketConstructorOpts, 'fd' | 'handle'> = {}): net.Socket {
  const fd = addon().tcpSocket(family);
  return adopt(fd, () => new net.Socket({ ...socket, fd }));
}

/** Sets SO_MARK on an open socket or a listening server. */
export function setMark(socket: net.Socket | net.Server, mark: number): void {
  addon().setMark(fdOf(socket), mark);
}

/** Sets IP_TRANSPARENT (or IPV6_TRANSPARENT, by the socket's family) on an open socket or a listening server. */
export function setTransparent(socket: net.Socket | net.Server): void {
  addon().setTransparent(fdOf(socket));
}

/**
 * Where an accepted connection was headed before an iptables REDIRECT sent it here (SO_ORIGINAL_DST from
 * conntrack). ENOENT when conntrack has no entry for it: nothing in its namespace uses NAT or conntrack.
 */
export function originalDst(socket: net.Socket): OriginalDst {
  return addon().originalDst(fdOf(socket));
}

/** AF_UNIX SOCK_SEQPACKET syscalls, on fds made non-blocking and close-on-exec; for `seqpacket-socket.ts`. */
export const seqpacket = {
  /** A listening socket bound at `path`. */
  listen: (socketPath: string, backlog: number): number => addon().seqpacketListen(socketPath, backlog),
  /** A connected socket; a full listener backlog is EAGAIN rather than a wait. */
  connect: (socketPath: string): number => addon().seqpacketConnect(socketPath),
  /** The next connection's fd, or null when none waits. */
  accept: (fd: number): number | null => addon().seqpacketAccept(fd),
  /** Sends one non-empty datagram with `fds` (SCM_RIGHTS); false when the socket is full and nothing was sent. */
  send: (fd: number, data: Buffer, fds: readonly number[]): boolean => addon().seqpacketSend(fd, data, fds),
  /** One datagram and the fds that came with it (now the caller's), null when none waits; empty data is the end. */
  recv: (fd: number): { data: Buffer; fds: number[] } | null => addon().seqpacketRecv(fd),
  /** Watches `fd` on the event loop; `onEvent` gets a poll error (a socket's own, SO_ERROR, e.g. ECONNRESET) or what the fd is ready for. */
  watch: (fd: number, onEvent: (err: Error | null, readable: boolean, writable: boolean) => void): FdWatcher =>
    new (addon().FdWatcher)(fd, onEvent),
};
