/**
 * Kubernetes' name-safe strings (k8s.io/apimachinery `pkg/util/rand`): an alphabet without vowels or look-alike
 * characters, so generated names never spell words or confuse readers. Used for generateName suffixes and for
 * the `pod-template-hash` of ReplicaSets.
 */
const ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';

/** `n` random characters of the alphabet (rand.String). */
export function randomSafeString(n: number): string {
  let s = '';
  for (let i = 0; i < n; i++) s += ALPHABET.charAt(Math.floor(Math.random() * ALPHABET.length));
  return s;
}

/** Maps each character of `s` to the alphabet by its code (rand.SafeEncodeString): digits become letters and digits. */
export function safeEncodeString(s: string): string {
  let out = '';
  for (let i = 0; i < s.length; i++) out += ALPHABET.charAt(s.charCodeAt(i) % ALPHABET.length);
  return out;
}
