/**
 * String formats of the Kubernetes API, after k8s.io/apimachinery `pkg/util/validation/validation.go` and
 * `pkg/api/validate/content` (`dns.go`, `kube.go`). Each check returns the list of messages upstream returns
 * (empty when valid), with upstream's wording, since clients show them verbatim.
 */

const DNS1123_LABEL_FMT = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
const DNS1123_SUBDOMAIN_FMT = `${DNS1123_LABEL_FMT}(\\.${DNS1123_LABEL_FMT})*`;
const DNS1035_LABEL_FMT = '[a-z]([-a-z0-9]*[a-z0-9])?';
const LABEL_KEY_FMT = '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]';
const LABEL_VALUE_FMT = `(${LABEL_KEY_FMT})?`;
const CONFIG_MAP_KEY_FMT = '[-._a-zA-Z0-9]+';

const DNS1123_LABEL = new RegExp(`^${DNS1123_LABEL_FMT}$`);
const DNS1123_SUBDOMAIN = new RegExp(`^${DNS1123_SUBDOMAIN_FMT}$`);
const DNS1035_LABEL = new RegExp(`^${DNS1035_LABEL_FMT}$`);
const LABEL_KEY = new RegExp(`^${LABEL_KEY_FMT}$`);
const LABEL_VALUE = new RegExp(`^${LABEL_VALUE_FMT}$`);
const CONFIG_MAP_KEY = new RegExp(`^${CONFIG_MAP_KEY_FMT}$`);

/** DNS label and subdomain lengths (RFC 1123), label key name part and label value lengths. */
export const DNS1123_LABEL_MAX_LENGTH = 63;
export const DNS1123_SUBDOMAIN_MAX_LENGTH = 253;
const LABEL_KEY_NAME_MAX_LENGTH = 63;
const LABEL_VALUE_MAX_LENGTH = 63;
/** IANA service names are at most 15 characters (RFC 6335), the limit upstream applies to port names. */
const PORT_NAME_MAX_LENGTH = 15;

export function maxLenError(n: number): string {
  return `must be no more than ${n} characters`;
}

function regexError(msg: string, fmt: string, ...examples: string[]): string {
  if (examples.length === 0) return `${msg} (regex used for validation is '${fmt}')`;
  return `${msg} (e.g. ${examples.map((e) => `'${e}', `).join(' or ')}regex used for validation is '${fmt}')`;
}

export function inclusiveRangeError(lo: number, hi: number): string {
  return `must be between ${lo} and ${hi}, inclusive`;
}

/** Byte length as Go's `len(string)` counts it. */
export function byteLength(s: string): number {
  return Buffer.byteLength(s, 'utf8');
}

export function isDns1123Label(value: string): string[] {
  const errs: string[] = [];
  if (byteLength(value) > DNS1123_LABEL_MAX_LENGTH) errs.push(maxLenError(DNS1123_LABEL_MAX_LENGTH));
  if (!DNS1123_LABEL.test(value)) {
    if (DNS1123_SUBDOMAIN.test(value)) errs.push('must not contain dots');
    else
      errs.push(
        regexError(
          "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character",
          DNS1123_LABEL_FMT,
          'my-name',
          '123-abc',
        ),
      );
  }
  return errs;
}

/** The length and pattern checks most formats are: one message for each that fails. */
function lengthAndPattern(value: string, max: number, pattern: RegExp, patternError: string): string[] {
  const errs: string[] = [];
  if (byteLength(value) > max) errs.push(maxLenError(max));
  if (!pattern.test(value)) errs.push(patternError);
  return errs;
}

export function isDns1123Subdomain(value: string): string[] {
  return lengthAndPattern(
    value,
    DNS1123_SUBDOMAIN_MAX_LENGTH,
    DNS1123_SUBDOMAIN,
    regexError(
      "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
      DNS1123_SUBDOMAIN_FMT,
      'example.com',
    ),
  );
}

export function isDns1035Label(value: string): string[] {
  return lengthAndPattern(
    value,
    DNS1123_LABEL_MAX_LENGTH,
    DNS1035_LABEL,
    regexError(
      "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character",
      DNS1035_LABEL_FMT,
      'my-name',
      'abc-123',
    ),
  );
}

const LABEL_KEY_MSG =
  "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

/** A label key, also called a qualified name: an optional DNS subdomain prefix and `/`, then a name part. */
export function isQualifiedName(value: string): string[] {
  const errs: string[] = [];
  const parts = value.split('/');
  let name: string;
  if (parts.length === 1) {
    name = parts[0]!;
  } else if (parts.length === 2) {
    const prefix = parts[0]!;
    name = parts[1]!;
    if (prefix.length === 0) errs.push('prefix part must be non-empty');
    else errs.push(...isDns1123Subdomain(prefix).map((m) => `prefix part ${m}`));
  } else {
    return [
      `a valid label key ${regexError(LABEL_KEY_MSG, LABEL_KEY_FMT, 'MyName', 'my.name', '123-abc')} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`,
    ];
  }
  if (name.length === 0) errs.push('name part must be non-empty');
  else if (byteLength(name) > LABEL_KEY_NAME_MAX_LENGTH)
    errs.push(`name part ${maxLenError(LABEL_KEY_NAME_MAX_LENGTH)}`);
  if (!LABEL_KEY.test(name))
    errs.push(`name part ${regexError(LABEL_KEY_MSG, LABEL_KEY_FMT, 'MyName', 'my.name', '123-abc')}`);
  return errs;
}

export function isLabelValue(value: string): string[] {
  return lengthAndPattern(
    value,
    LABEL_VALUE_MAX_LENGTH,
    LABEL_VALUE,
    regexError(
      "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
      LABEL_VALUE_FMT,
      'MyValue',
      'my_value',
      '12345',
    ),
  );
}

/** A key of a ConfigMap's or Secret's data. */
export function isConfigMapKey(value: string): string[] {
  const errs = lengthAndPattern(
    value,
    DNS1123_SUBDOMAIN_MAX_LENGTH,
    CONFIG_MAP_KEY,
    regexError(
      "a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
      CONFIG_MAP_KEY_FMT,
      'key.name',
      'KEY_NAME',
      'key-name',
    ),
  );
  if (value === '.') errs.push("must not be '.'");
  else if (value === '..') errs.push("must not be '..'");
  else if (value.startsWith('..')) errs.push("must not start with '..'");
  return errs;
}

export function isValidPortNum(port: number): string[] {
  return Number.isInteger(port) && port >= 1 && port <= 65535 ? [] : [inclusiveRangeError(1, 65535)];
}

/** An IANA service name (RFC 6335), lower case only, as upstream requires of port names. */
export function isValidPortName(port: string): string[] {
  const errs: string[] = [];
  if (byteLength(port) > PORT_NAME_MAX_LENGTH) errs.push(maxLenError(PORT_NAME_MAX_LENGTH));
  if (!/^[-a-z0-9]+$/.test(port)) errs.push('must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)');
  if (!/[a-z]/.test(port)) errs.push('must contain at least one letter (a-z)');
  if (port.includes('--')) errs.push('must not contain consecutive hyphens');
  if (port.startsWith('-') || port.endsWith('-')) errs.push('must not begin or end with a hyphen');
  return errs;
}

/**
 * A name check for one kind (apimachinery `ValidateNameFunc`). With `prefix`, the value is a `generateName`,
 * which may end in '-' since a random suffix follows.
 */
export type NameRule = (name: string, prefix: boolean) => string[];

function masked(name: string, prefix: boolean): string {
  return prefix && name.endsWith('-') ? `${name.slice(0, -2)}a` : name;
}

export const nameIsDnsSubdomain: NameRule = (name, prefix) => isDns1123Subdomain(masked(name, prefix));
export const nameIsDnsLabel: NameRule = (name, prefix) => isDns1123Label(masked(name, prefix));
export const nameIsDns1035Label: NameRule = (name, prefix) => isDns1035Label(masked(name, prefix));

/**
 * A name that is one URL path segment (apimachinery `pkg/api/validation/path` `IsValidPathSegmentName`, and
 * `IsValidPathSegmentPrefix` for a generateName): not `.` or `..`, no `/` or `%`. RBAC's names, such as
 * `system:controller:job-controller`, need no more.
 */
export const nameIsPathSegment: NameRule = (name, prefix) => {
  if (!prefix && (name === '.' || name === '..')) return [`may not be '${name}'`];
  return ['/', '%'].filter((c) => name.includes(c)).map((c) => `may not contain '${c}'`);
};
