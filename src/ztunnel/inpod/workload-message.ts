import { closeSync } from 'node:fs';
import { MeshError } from '../../lib/errors.js';
import { decodeWorkloadRequest, type WorkloadRequest } from '../../zds/zds-codec.js';

/** A ZDS request as ztunnel acts on it: an `add` comes with its netns fd, which the receiver then owns. */
export type WorkloadMessage =
  Exclude<WorkloadRequest, { kind: 'add' }> | (Extract<WorkloadRequest, { kind: 'add' }> & { readonly netns: number });

/**
 * One datagram from the node agent and the fds that came with it (ztunnel `src/inpod/protocol.rs`): an Add carries
 * exactly one fd, every other request none. Anything else is `ZDS_ERR_DECODE`, and every fd that came is closed.
 */
export function readWorkloadMessage(data: Buffer, fds: readonly number[]): WorkloadMessage {
  try {
    if (fds.length > 1) throw new MeshError('ZDS_ERR_DECODE', `expected 1 fd with a ZDS message, got ${fds.length}`);
    const request = decodeWorkloadRequest(data);
    const [netns] = fds;
    if (request.kind === 'add') {
      if (netns === undefined)
        throw new MeshError('ZDS_ERR_DECODE', `AddWorkload for ${request.uid} came without a netns fd (SCM_RIGHTS)`);
      return { ...request, netns };
    }
    if (netns !== undefined)
      throw new MeshError(
        'ZDS_ERR_DECODE',
        `a ZDS ${request.kind} request came with an fd; only AddWorkload carries one`,
      );
    return request;
  } catch (e) {
    for (const fd of fds) closeSync(fd);
    throw e;
  }
}
