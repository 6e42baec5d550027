/**
 * `amesh x extauthz`, Istio's sample ext_authz server (istio `samples/extauthz/cmd/extauthz/main.go`), run as a
 * child process on 127.0.0.1 (kernel-chosen ports) and asked by clients amesh did not write: curl over HTTP/1.1,
 * and python3-grpcio calling Envoy's `/envoy.service.auth.v3.Authorization/Check` with requests encoded, and
 * replies decoded, by hand from Envoy's field numbers (test/interop/ext_authz_grpcio_client.py).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { once } from 'node:events';
import net from 'node:net';
import { ameshCommand } from '../src/up/amesh-command.js';
import { TEST_DEADLINE_MS } from './helpers/deadlines.js';
import { pythonSkip, runPython } from './helpers/python.js';
import { runToExit } from './helpers/run-to-exit.js';

const skipGrpc = pythonSkip('grpc', 'python3-grpcio');
const DENY_BODY = 'denied by ext_authz for not found header `x-ext-authz: allow` in the request';

/** The server: its process, everything it printed on stdout and stderr, and the ports it announced. */
let server: ChildProcessWithoutNullStreams;
let stdout = '';
let stderr = '';
let httpPort = 0;
let grpcPort = 0;

/** Resolves with the match once the server's `stream` holds `pattern`; fails if it exits first or the deadline passes. */
function printed(stream: 'stdout' | 'stderr', pattern: RegExp): Promise<RegExpMatchArray> {
  const text = (): string => (stream === 'stdout' ? stdout : stderr);
  return new Promise((resolve, reject) => {
    const done = (): void => {
      clearTimeout(timer);
      server[stream].off('data', check);
      server.off('exit', exited);
    };
    const check = (): void => {
      const m = text().match(pattern);
      if (m === null) return;
      done();
      resolve(m);
    };
    const exited = (): void => {
      done();
      reject(new Error(`amesh x extauthz exited before printing ${String(pattern)}:\n${stdout}${stderr}`));
    };
    const timer = setTimeout(() => {
      done();
      reject(new Error(`no ${String(pattern)} on ${stream} within ${TEST_DEADLINE_MS} ms:\n${text()}`));
    }, TEST_DEADLINE_MS);
    // Listeners are added after the ones that collect the output, so a chunk is in `text()` when `check` runs.
    server[stream].on('data', check);
    server.once('exit', exited);
    check();
  });
}

before(async () => {
  const { cmd, args } = ameshCommand();
  server = spawn(cmd, [...args, 'x', 'extauthz', '--http', '0', '--grpc', '0', '--address', '127.0.0.1'], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  server.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  server.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const m = await printed('stdout', /^listening http (\d+) grpc (\d+)$/m);
  httpPort = Number(m[1]);
  grpcPort = Number(m[2]);
});
after(async () => {
  if (server.exitCode === null && server.signalCode === null) {
    server.kill('SIGKILL');
    await once(server, 'exit');
  }
});

/** curl's HTTP/1.1 request to the HTTP check port: the status, the response headers (lower-case names) and body. */
async function curl(
  options: string[],
  path: string,
): Promise<{ status: number; headers: Map<string, string>; body: string }> {
  const r = await runToExit(
    'curl',
    ['-sS', '--http1.1', '-i', ...options, `http://127.0.0.1:${httpPort}${path}`],
    TEST_DEADLINE_MS,
  );
  assert.equal(r.status, 0, r.stderr);
  const cut = r.stdout.indexOf('\r\n\r\n');
  const [statusLine = '', ...lines] = r.stdout.slice(0, cut).split('\r\n');
  const headers = new Map(
    lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()] as const),
  );
  return { status: Number(statusLine.split(' ')[1]), headers, body: r.stdout.slice(cut + 4) };
}

test("HTTP: curl's request with x-ext-authz: allow gets 200, result allowed, its override header echoed and a one-line account of what was received", async () => {
  const r = await curl(
    ['-H', 'x-ext-authz: allow', '-H', 'x-ext-authz-additional-header-override: from-curl'],
    '/any/path?q=1',
  );
  assert.equal(r.status, 200);
  assert.equal(r.headers.get('x-ext-authz-check-result'), 'allowed');
  assert.equal(r.headers.get('x-ext-authz-additional-header-override'), 'from-curl');
  const received = r.headers.get('x-ext-authz-check-received') ?? '';
  assert.ok(received.startsWith(`GET 127.0.0.1:${httpPort}/any/path?q=1, headers: `), received);
  assert.match(received, /"x-ext-authz":\["allow"\]/);
  assert.match(received, /, body: \[\]$/);
  assert.equal(r.body, '');
  // The decision is logged as the sample logs it: Go's date and time, then [HTTP][allowed], on one line.
  await printed(
    'stderr',
    new RegExp(
      `^\\d{4}/\\d\\d/\\d\\d \\d\\d:\\d\\d:\\d\\d \\[HTTP\\]\\[allowed\\]: GET 127\\.0\\.0\\.1:${httpPort}/any/path\\?q=1, headers: .*$`,
      'm',
    ),
  );
});

test("HTTP: without x-ext-authz: allow (absent, or another value) curl gets 403, result denied and the sample's body; the request's body is reported", async () => {
  const absent = await curl([], '/');
  assert.equal(absent.status, 403);
  assert.equal(absent.headers.get('x-ext-authz-check-result'), 'denied');
  assert.equal(absent.headers.get('x-ext-authz-additional-header-override'), '', 'present, empty');
  assert.equal(absent.body, DENY_BODY);
  const other = await curl(['-H', 'x-ext-authz: deny', '-X', 'POST', '--data-binary', 'line one\nline two'], '/post');
  assert.equal(other.status, 403);
  assert.equal(other.headers.get('x-ext-authz-check-result'), 'denied');
  assert.equal(other.headers.get('content-type'), 'text/plain; charset=utf-8');
  assert.equal(other.body, DENY_BODY);
  const received = other.headers.get('x-ext-authz-check-received') ?? '';
  assert.ok(received.startsWith(`POST 127.0.0.1:${httpPort}/post, headers: `), received);
  assert.match(received, /, body: \[line one line two\]$/, 'a newline of the body cannot be in a header: a space');
  await printed('stderr', /\[HTTP\]\[denied\]: POST 127\.0\.0\.1:\d+\/post, headers: .*body: \[line one line two\]$/m);
});

/** What test/interop/ext_authz_grpcio_client.py decodes of one CheckResponse. */
interface DecodedCheck {
  readonly status_code: number;
  readonly ok?: { headers: [string, string][] };
  readonly denied?: { http_status: number; headers: [string, string][]; body: string };
}

describe(
  'gRPC: python3-grpcio calls /envoy.service.auth.v3.Authorization/Check, encoding by hand',
  { skip: skipGrpc },
  () => {
    const CASES = {
      headerAllow: {
        headers: { 'x-ext-authz': 'allow' },
        principal: 'spiffe://cluster.local/ns/foo/sa/b',
        path: '/h1',
      },
      headerDeny: { headers: { 'x-ext-authz': 'no' }, principal: 'spiffe://cluster.local/ns/foo/sa/a', path: '/h2' },
      allowedAccount: { headers: {}, principal: 'spiffe://cluster.local/ns/foo/sa/a', path: '/p1' },
      otherAccount: { headers: {}, principal: 'spiffe://cluster.local/ns/foo/sa/ab', path: '/p2' },
    };
    const answers = new Map<keyof typeof CASES, DecodedCheck>();

    before(async () => {
      const names = Object.keys(CASES) as (keyof typeof CASES)[];
      const cases = names.map((n) => ({ ...CASES[n], host: 'httpbin.example' }));
      const py = await runPython(
        'ext_authz_grpcio_client.py',
        [`127.0.0.1:${grpcPort}`, JSON.stringify(cases)],
        TEST_DEADLINE_MS,
      );
      assert.equal(py.status, 0, py.stderr);
      (JSON.parse(py.stdout) as DecodedCheck[]).forEach((d, i) => answers.set(names[i]!, d));
    });

    const allowedHeaders = (d: DecodedCheck | undefined, path: string): void => {
      assert.ok(d?.ok, JSON.stringify(d));
      assert.equal(d.status_code, 0, 'google.rpc.Code OK');
      assert.equal(d.denied, undefined);
      const h = d.ok.headers;
      assert.deepEqual(
        h.map(([k]) => k),
        ['x-ext-authz-check-result', 'x-ext-authz-check-received', 'x-ext-authz-additional-header-override'],
      );
      assert.equal(h[0]![1], 'allowed');
      assert.match(h[1]![1], new RegExp(`"path":"${path}"`), 'the received attributes, on one line');
      assert.equal(h[2]![1], 'grpc-additional-header-override-value');
    };
    const denied = (d: DecodedCheck | undefined, path: string): void => {
      assert.ok(d?.denied, JSON.stringify(d));
      assert.equal(d.status_code, 7, 'google.rpc.Code PERMISSION_DENIED');
      assert.equal(d.ok, undefined);
      assert.equal(d.denied.http_status, 403, 'envoy.type.v3.StatusCode Forbidden');
      assert.equal(d.denied.body, DENY_BODY);
      assert.deepEqual(d.denied.headers[0], ['x-ext-authz-check-result', 'denied']);
      assert.match(d.denied.headers[1]?.[1] ?? '', new RegExp(`"path":"${path}"`));
      assert.deepEqual(d.denied.headers[2], [
        'x-ext-authz-additional-header-override',
        'grpc-additional-header-override-value',
      ]);
    };

    test('the header x-ext-authz: allow is allowed (status OK, ok_response headers), whatever the principal', () =>
      allowedHeaders(answers.get('headerAllow'), '/h1'));
    test('the header with another value is denied (PERMISSION_DENIED, denied_response 403 with the body), even from the allowed account', () =>
      denied(answers.get('headerDeny'), '/h2'));
    test('without the header, a source principal ending in /sa/a (--allow_service_account default) is allowed', () =>
      allowedHeaders(answers.get('allowedAccount'), '/p1'));
    test('without the header, another principal (/sa/ab: a suffix match on /sa/a, not a prefix) is denied', () =>
      denied(answers.get('otherAccount'), '/p2'));
    test('each decision is logged on one line: [gRPCv3][allowed|denied]: host and path, then the attributes', async () => {
      await printed('stderr', /\[gRPCv3\]\[allowed\]: httpbin\.example\/p1, attributes: \{.*\}$/m);
      await printed('stderr', /\[gRPCv3\]\[denied\]: httpbin\.example\/p2, attributes: \{.*\}$/m);
    });
  },
);

test('a bad flag is refused with AMESH_ERR_CONFIG, naming the flag', async () => {
  const { cmd, args } = ameshCommand();
  for (const [flag, value] of [
    ['--http', '70000'],
    ['--grpc', 'x'],
    ['--allow_service_account', ''],
    ['--address', 'nowhere'],
  ] as const) {
    const r = await runToExit(
      cmd,
      [...args, 'x', 'extauthz', '--http', '0', '--grpc', '0', flag, value],
      TEST_DEADLINE_MS,
    );
    assert.equal(r.status, 1, `${flag} ${value}: ${r.stdout}`);
    assert.match(r.stderr, new RegExp(`^error: AMESH_ERR_CONFIG: ${flag}: `), r.stderr);
  }
});

test('SIGTERM closes both ports and exits 0', async () => {
  const exited = once(server, 'exit');
  server.kill('SIGTERM');
  assert.deepEqual(await exited, [0, null]);
  for (const port of [httpPort, grpcPort]) {
    const outcome = await new Promise<string | undefined>((resolve) => {
      const s = net.connect(port, '127.0.0.1');
      s.once('connect', () => {
        s.destroy();
        resolve('connected');
      });
      s.once('error', (e: NodeJS.ErrnoException) => resolve(e.code));
    });
    assert.equal(outcome, 'ECONNREFUSED', `port ${port}`);
  }
});
