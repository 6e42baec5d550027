import { X509Certificate } from 'node:crypto';

const PEM_RE = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/** Splits a PEM bundle into its certificates, each normalised to end in "\n". */
export function splitPemCertificates(bundle: string): string[] {
  return (bundle.match(PEM_RE) ?? []).map((p) => p.trim() + '\n');
}

/** Serial number in decimal, as ztunnel prints it in `/config_dump`. */
export function serialDecimal(cert: X509Certificate): string {
  return BigInt('0x' + cert.serialNumber).toString(10);
}

/** `der` as one PEM block labelled `label` (RFC 7468), 64 base64 characters a line, without a final newline. */
export function pemEncode(label: string, der: Buffer): string {
  const lines = der.toString('base64').match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join('\n')}\n-----END ${label}-----`;
}
