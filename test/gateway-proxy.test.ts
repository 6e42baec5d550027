import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash, X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { startEchoServer, type EchoServer } from '../src/echo/echo-server.js';
import { loadZtunnelConfig } from '../src/ztunnel/config.js';
import type { Ztunnel } from '../src/ztunnel/ztunnel.js';
import { startGatewayProxy } from '../src/waypoint/waypoint-proxy.js';
import { CapturedLogs } from './helpers/captured-logs.js';
import { startZtunnel } from './helpers/in-process.js';
import { meshFixture, waitFor, type MeshFixture } from './helpers/mesh-fixture.js';
import { pythonSkip, runPython } from './helpers/python.js';
import { pythonXdsServer, spawnPythonPeer, type PythonPeer } from './helpers/python-xds-server.js';
import { runToExit } from './helpers/run-to-exit.js';
import { selfSignedCertificate } from './helpers/tls-secret.js';

/** The gateway's resource and certificates come from python3-grpcio's xDS server; its listeners from python3-protobuf. */
const skip =
  pythonSkip('grpc', 'python3-grpcio') ||
  pythonSkip('google.protobuf', 'python3-protobuf') ||
  (spawnSync('protoc', ['--version']).status === 0
    ? false
    : 'protoc is not installed (apt-get install protobuf-compiler libprotobuf-dev; .ci/run does this)');

const XDS_IP = '127.124.0.100';
const GATEWAY_IP = '127.124.0.9';
const WEB_IP = '127.124.0.2';
/** python3-grpcio's echo server, behind a Service whose port declares GRPC. */
const GRPC_IP = '127.124.0.3';
/** An HTTP port routing to the gRPC Service: h2c in, HTTP/2 out because the backend port says GRPC. */
const GRPC_PORT = 17081;
const GRPC_HOST = 'grpc.shop.svc.cluster.local';
/** The gateway listens on every address, as Envoy's `0.0.0.0` listeners: ports no other test uses. */
const HTTP_PORT = 17080;
/** MUTUAL (mtls.test) beside SIMPLE (simple.test): client certificates asked for, required by one listener only. */
const MIXED_PORT = 17443;
/** MUTUAL alone: the handshake itself requires a certificate. */
const STRICT_PORT = 17444;
/** OPTIONAL_MUTUAL. */
const OPTIONAL_PORT = 17445;
/**
 * MUTUAL with a CA bundle of two client certificates, each port admitting only one of them: by subject alternative
 * name (san.test), by the certificate's SHA-256 fingerprint (pin.test), by its SPKI's SHA-256 (spki.test).
 */
const SAN_PORT = 17446;
const PIN_PORT = 17447;
const SPKI_PORT = 17448;
/** A TLS port whose listeners terminate TLS and relay what is inside: db.test (SIMPLE) and dbm.test (MUTUAL). */
const TERMINATE_PORT = 17449;
const WEB_HOST = 'web.shop.svc.cluster.local';

const toWeb = {
  name: 'shop/web.0',
  forward: { backends: [{ namespace: 'shop', hostname: WEB_HOST, port: 80, weight: 1 }] },
};
const listener = (name: string, port: number, protocol: string, hostname: string, tls: object = {}): object => ({
  name,
  port,
  protocol,
  hostname,
  ...tls,
  virtualHosts: [{ hostname: '*', routes: [toWeb] }],
});
const mutual = (optional: boolean, more: object = {}): object => ({
  credentialNames: ['kubernetes://server'],
  clientCaNames: ['kubernetes://server-cacert'],
  clientCertificateOptional: optional,
  ...more,
});
/** MUTUAL against the bundle of both client certificates, with `pins` (SANs, hashes or SPKI hashes). */
const pinned = (pins: object): object => ({ ...mutual(false, pins), clientCaNames: ['kubernetes://pair-cacert'] });

describe(
  "the ingress gateway proxy serves its listeners from a foreign xDS server: h2c, and client certificates checked against the CA it is sent (MUTUAL, OPTIONAL_MUTUAL), to curl's requests",
  { skip },
  () => {
    let fx: MeshFixture;
    let xds: PythonPeer;
    let web: EchoServer;
    let grpc: PythonPeer;
    let z2: Ztunnel;
    let gw: Ztunnel | undefined;
    const gatewayLogs = new CapturedLogs('gateway');
    /**
     * The server's certificate (every listener's name), a client's the CA signed, a second client's (other.test)
     * that only the pair bundle trusts, and a stranger's.
     */
    let server: { cert: string; key: string };
    let client: { cert: string; key: string };
    let other: { cert: string; key: string };
    let stranger: { cert: string; key: string };

    before(async () => {
      fx = await meshFixture();
      server = selfSignedCertificate(
        fx.dir,
        'server',
        ['mtls', 'simple', 'opt', 'san', 'pin', 'spki', 'db', 'dbm'].map((n) => `DNS:${n}.test`),
      );
      client = selfSignedCertificate(fx.dir, 'client', ['DNS:client.test']);
      other = selfSignedCertificate(fx.dir, 'other', ['DNS:other.test']);
      stranger = selfSignedCertificate(fx.dir, 'stranger', ['DNS:client.test']);
      const pem = (f: string): Promise<string> => readFile(f, 'utf8');
      const otherCert = new X509Certificate(await pem(other.cert));
      const clientSpki = createHash('sha256')
        .update(new X509Certificate(await pem(client.cert)).publicKey.export({ type: 'spki', format: 'der' }))
        .digest('base64');
      const served = await pythonXdsServer(fx.dir, XDS_IP, [
        {
          workload: {
            uid: 'Kubernetes//Pod/ingress/gw-0',
            name: 'gw-0',
            namespace: 'ingress',
            addresses: [GATEWAY_IP],
            service_account: 'gw-istio',
            node: 'n3',
          },
        },
        {
          workload: {
            uid: 'Kubernetes//Pod/shop/web-0',
            name: 'web-0',
            namespace: 'shop',
            addresses: [WEB_IP],
            service_account: 'web',
            node: 'n2',
            services: { [`shop/${WEB_HOST}`]: [[80, 8080]] },
          },
        },
        {
          service: { name: 'web', namespace: 'shop', hostname: WEB_HOST, vips: ['10.96.2.10'], ports: [[80, 8080, 1]] },
        },
        {
          workload: {
            uid: 'Kubernetes//Pod/shop/grpc-0',
            name: 'grpc-0',
            namespace: 'shop',
            addresses: [GRPC_IP],
            service_account: 'grpc',
            node: 'n2',
            services: { [`shop/${GRPC_HOST}`]: [[50051, 50051]] },
          },
        },
        // app_protocol GRPC = 3 (ztunnel proto/workload.proto AppProtocol).
        {
          service: {
            name: 'grpc',
            namespace: 'shop',
            hostname: GRPC_HOST,
            vips: ['10.96.2.11'],
            ports: [[50051, 50051, 3]],
          },
        },
        { secret: { name: 'kubernetes://server', cert: await pem(server.cert), key: await pem(server.key) } },
        { secret: { name: 'kubernetes://server-cacert', ca: await pem(client.cert) } },
        { secret: { name: 'kubernetes://pair-cacert', ca: (await pem(client.cert)) + (await pem(other.cert)) } },
        {
          waypoint: {
            name: 'ingress/gw-istio',
            message: {
              listeners: [
                listener('http', HTTP_PORT, 'HTTP', ''),
                {
                  name: 'grpc',
                  port: GRPC_PORT,
                  protocol: 'HTTP',
                  hostname: '',
                  virtualHosts: [
                    {
                      hostname: '*',
                      routes: [
                        {
                          name: 'shop/grpc.0',
                          forward: { backends: [{ namespace: 'shop', hostname: GRPC_HOST, port: 50051, weight: 1 }] },
                        },
                      ],
                    },
                  ],
                },
                listener('mtls', MIXED_PORT, 'HTTPS', 'mtls.test', mutual(false)),
                listener('simple', MIXED_PORT, 'HTTPS', 'simple.test', { credentialNames: ['kubernetes://server'] }),
                listener('strict', STRICT_PORT, 'HTTPS', 'mtls.test', mutual(false)),
                listener('optional', OPTIONAL_PORT, 'HTTPS', 'opt.test', mutual(true)),
                listener('san', SAN_PORT, 'HTTPS', 'san.test', pinned({ clientSubjectAltNames: ['client.test'] })),
                // Envoy's form of a fingerprint: upper-case hex in colon-separated pairs, as Node prints it.
                listener(
                  'pin',
                  PIN_PORT,
                  'HTTPS',
                  'pin.test',
                  pinned({ clientCertificateHashes: [otherCert.fingerprint256] }),
                ),
                listener('spki', SPKI_PORT, 'HTTPS', 'spki.test', pinned({ clientCertificateSpkis: [clientSpki] })),
                listener('db', TERMINATE_PORT, 'TLS', 'db.test', {
                  terminate: true,
                  credentialNames: ['kubernetes://server'],
                }),
                listener('dbm', TERMINATE_PORT, 'TLS', 'dbm.test', { terminate: true, ...mutual(false) }),
              ],
            },
          },
        },
      ]);
      xds = served.peer;
      web = await startEchoServer(WEB_IP, 8080, 'web');
      grpc = spawnPythonPeer('grpc_echo.py', ['serve', '50051', GRPC_IP]);
      await waitFor('the gRPC echo server', () => grpc.lines().includes('listening'));
      z2 = await startZtunnel('', 'n2', fx.ca, served.env);
      gw = await startGatewayProxy(
        {
          ztunnel: loadZtunnelConfig(
            {
              localCa: fx.ca,
              adminAddress: '127.0.0.1:0',
              metricsAddress: '127.0.0.1:0',
              readinessAddress: '127.0.0.1:0',
            },
            { ...served.env, POD_NAME: 'gw-0', POD_NAMESPACE: 'ingress', INSTANCE_IP: GATEWAY_IP, NODE_NAME: 'n3' },
          ),
          podUid: 'Kubernetes//Pod/ingress/gw-0',
          instanceIp: GATEWAY_IP,
          gateway: 'ingress/gw-istio',
        },
        gatewayLogs.control,
      );
      await gatewayLogs.waitFor(
        'the CA certificate applied',
        (l) => l['message'] === 'CA certificate applied' && l['credential'] === 'kubernetes://server-cacert',
      );
      for (const port of [
        HTTP_PORT,
        GRPC_PORT,
        MIXED_PORT,
        STRICT_PORT,
        OPTIONAL_PORT,
        SAN_PORT,
        PIN_PORT,
        SPKI_PORT,
        TERMINATE_PORT,
      ])
        await gatewayLogs.waitFor(`the listener on ${port}`, (l) => {
          const a = l['address'];
          return l['message'] === 'gateway listener up' && typeof a === 'string' && a.endsWith(`:${port}`);
        });
    });

    after(async () => {
      await Promise.all([z2?.shutdown(), gw?.shutdown()]);
      await web?.close();
      xds?.proc.kill();
      grpc?.proc.kill();
      await fx?.cleanup();
    });

    /** curl to the gateway as `name:port`: `<status> <http version>` and the body, or curl's error. */
    const curl = async (name: string, port: number, ...args: string[]): Promise<string> => {
      const r = await runToExit(
        'curl',
        [
          '-sS',
          '-m',
          '5',
          '--resolve',
          `${name}:${port}:${GATEWAY_IP}`,
          '-w',
          '\n%{http_code} %{http_version}',
          ...args,
          `${port === HTTP_PORT ? 'http' : 'https'}://${name}:${port}/hello`,
        ],
        10_000,
      );
      return r.status === 0 ? r.stdout : `ERR ${r.stderr.trim()}`;
    };
    const withCert = (c: { cert: string; key: string }): string[] => ['--cert', c.cert, '--key', c.key];

    test('an HTTP port takes HTTP/2 with prior knowledge (h2c) and HTTP/1.1, each routed to the backend over HBONE', async () => {
      assert.match(await curl('any.test', HTTP_PORT, '--http2-prior-knowledge'), /"hostname":"web".*\n200 2$/s);
      assert.match(await curl('any.test', HTTP_PORT, '--http1.1'), /"hostname":"web".*\n200 1\.1$/s);
    });

    test('the requests are counted with reporter="source", the gateway as source and the backend pod\'s principal as destination (it is reached over HBONE), the client\'s plaintext hop not mutual_tls', async () => {
      await curl('any.test', HTTP_PORT, '--http1.1');
      const text = await (await fetch(`http://127.0.0.1:${gw!.ports.metrics}/stats/prometheus`)).text();
      const line = text
        .split('\n')
        .find((l) => l.startsWith('istio_requests_total{') && l.includes('destination_workload="web-0"'));
      assert.ok(line !== undefined, text);
      for (const label of [
        'reporter="source"',
        'source_workload="gw-0"',
        'source_principal="spiffe://cluster.local/ns/ingress/sa/gw-istio"',
        'destination_principal="spiffe://cluster.local/ns/shop/sa/web"',
        'connection_security_policy="unknown"',
      ])
        assert.ok(line.includes(label), `${label} in ${line}`);
    });

    test('gRPC from python3-grpcio through an HTTP port reaches a backend whose port declares GRPC over HTTP/2, its status coming back in trailers', async () => {
      const call = async (method: string): Promise<string> => {
        const r = await runPython('grpc_echo.py', [
          'call',
          `${GATEWAY_IP}:${GRPC_PORT}`,
          method,
          'through the gateway',
        ]);
        assert.equal(r.status, 0, r.stderr);
        return r.stdout.trim();
      };
      assert.equal(await call('Say'), 'OK through the gateway');
      assert.equal(await call('Missing'), 'STATUS NOT_FOUND');
    });

    test('MUTUAL: a client certificate the CA signed is let in; none, or one the CA did not sign, is refused; a SIMPLE listener of the same port needs none', async () => {
      const ca = ['--cacert', server.cert];
      assert.match(await curl('mtls.test', MIXED_PORT, ...ca, ...withCert(client)), /"hostname":"web".*\n200 2$/s);
      assert.match(await curl('mtls.test', MIXED_PORT, ...ca), /^ERR /);
      assert.match(await curl('mtls.test', MIXED_PORT, ...ca, ...withCert(stranger)), /^ERR /);
      assert.match(await curl('simple.test', MIXED_PORT, ...ca), /"hostname":"web".*\n200 2$/s);
      await waitFor('the refusals logged with their reasons', () =>
        ['no client certificate', 'the client certificate does not verify'].every((why) =>
          gatewayLogs.lines.some(
            (l) => l['message'] === 'gateway: client refused' && String(l['error']).startsWith(why),
          ),
        ),
      );
      // A port whose listeners all require a certificate refuses in the handshake.
      assert.match(await curl('mtls.test', STRICT_PORT, ...ca), /^ERR /);
      assert.match(await curl('mtls.test', STRICT_PORT, ...ca, ...withCert(client)), /\n200 2$/);
    });

    test('OPTIONAL_MUTUAL: a client without a certificate, or with one the CA signed, is let in; one with a certificate the CA did not sign is refused', async () => {
      const ca = ['--cacert', server.cert];
      assert.match(await curl('opt.test', OPTIONAL_PORT, ...ca), /\n200 2$/);
      assert.match(await curl('opt.test', OPTIONAL_PORT, ...ca, ...withCert(client)), /\n200 2$/);
      assert.match(await curl('opt.test', OPTIONAL_PORT, ...ca, ...withCert(stranger)), /^ERR /);
    });

    test('MUTUAL with subjectAltNames or certificate pins: of two certificates the CA bundle trusts, only the one carrying a listed SAN, fingerprint or SPKI hash is let in', async () => {
      const ca = ['--cacert', server.cert];
      const admits = async (name: string, port: number): Promise<[boolean, boolean]> => [
        /\n200 2$/.test(await curl(name, port, ...ca, ...withCert(client))),
        /\n200 2$/.test(await curl(name, port, ...ca, ...withCert(other))),
      ];
      assert.deepEqual(await admits('san.test', SAN_PORT), [true, false]);
      assert.deepEqual(await admits('pin.test', PIN_PORT), [false, true]);
      assert.deepEqual(await admits('spki.test', SPKI_PORT), [true, false]);
      await waitFor('the refusals logged with their reasons', () =>
        ['carries none of the subject alternative names client.test', 'matches none of the certificate hashes'].every(
          (why) =>
            gatewayLogs.lines.some(
              (l) => l['message'] === 'gateway: client refused' && String(l['error']).includes(why),
            ),
        ),
      );
    });

    test('a TLS listener that terminates TLS relays the bytes inside to its route (curl speaks HTTP in it to the backend); a MUTUAL one on the same port refuses a client without a certificate', async () => {
      const ca = ['--cacert', server.cert];
      assert.match(await curl('db.test', TERMINATE_PORT, ...ca), /"hostname":"web".*\n200 1\.1$/s);
      assert.match(await curl('dbm.test', TERMINATE_PORT, ...ca), /^ERR /);
      assert.match(
        await curl('dbm.test', TERMINATE_PORT, ...ca, ...withCert(client)),
        /"hostname":"web".*\n200 1\.1$/s,
      );
      assert.match(await curl('dbm.test', TERMINATE_PORT, ...ca, ...withCert(stranger)), /^ERR /);
    });
  },
);
