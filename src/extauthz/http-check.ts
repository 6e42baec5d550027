/**
 * The HTTP check of Istio's sample ext_authz server (istio `samples/extauthz/cmd/extauthz/main.go`, `ServeHTTP`),
 * which Envoy's ext_authz filter calls in its HTTP mode: any method and path; allowed (200) when the request's
 * `x-ext-authz` is `allow`, else denied (403 with the sample's body). Both answers say what the server received and
 * echo `x-ext-authz-additional-header-override`.
 */
import type http from 'node:http';
import { CHECK_WORDS, notTooLong } from './check-words.js';

/** What a header value may hold in Node (its `checkInvalidHeaderChar`): anything else becomes a space. */
const NOT_HEADER_SAFE = /[^\t\x20-\x7e\x80-\xff]/g;

/** Answers one check request once its body is read; `log` gets the decision, as one line. */
export function httpCheck(req: http.IncomingMessage, res: http.ServerResponse, log: (line: string) => void): void {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('error', (e) => log(`[HTTP] read body failed: ${e.message}`));
  req.on('end', () => {
    const first = (name: string): string => req.headersDistinct[name]?.[0] ?? '';
    // latin1: each byte of the body is one character, so the header carries the bytes as they came.
    const body = Buffer.concat(chunks).toString('latin1');
    const headers = JSON.stringify(req.headersDistinct);
    const line = `${req.method ?? ''} ${req.headers.host ?? ''}${req.url ?? ''}, headers: ${headers}, body: [${notTooLong(body)}]`;
    const received = line.replace(NOT_HEADER_SAFE, ' ');
    const allowed = first(CHECK_WORDS.checkHeader) === CHECK_WORDS.allowValue;
    const result = allowed ? CHECK_WORDS.allowed : CHECK_WORDS.denied;
    log(`[HTTP][${result}]: ${received}`);
    res.setHeader(CHECK_WORDS.resultHeader, result);
    res.setHeader(CHECK_WORDS.overrideHeader, first(CHECK_WORDS.overrideHeader));
    res.setHeader(CHECK_WORDS.receivedHeader, received);
    if (allowed) {
      res.writeHead(200, { 'content-length': 0 }).end();
      return;
    }
    res
      .writeHead(403, {
        'content-type': 'text/plain; charset=utf-8',
        'content-length': Buffer.byteLength(CHECK_WORDS.denyBody),
      })
      .end(CHECK_WORDS.denyBody);
  });
}
