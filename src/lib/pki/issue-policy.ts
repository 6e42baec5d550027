/** What every certificate amesh issues shares with Istio's: its serial, its backdating, a generated root's lifetime. */
import { randomBytes } from 'node:crypto';

/**
 * Certificates start this long before they are issued, so peers whose clocks are behind accept fresh and rotated
 * certificates: Istio's ClockSkewGracePeriod (security/pkg/pki/util/generate_cert.go).
 */
export const CLOCK_SKEW_GRACE_MS = 2 * 60_000;

/** Lifetime of a generated self-signed root: Istio's self-signed CA default is 10 years. */
export const SELF_SIGNED_ROOT_TTL_MS = 10 * 365 * 24 * 3600 * 1000;

/** A positive 128-bit serial, hex. */
export function randomSerial(): string {
  const b = randomBytes(16);
  b[0] = b[0]! & 0x7f;
  return b.toString('hex');
}
