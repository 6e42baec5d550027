import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AppProtocol, appProtocolOfName, appProtocolOfServicePort } from './app-protocol.js';

test("a Service port's app protocol, as Istio's ConvertProtocol: appProtocol first, else the port name's prefix", () => {
  const cases: [Parameters<typeof appProtocolOfServicePort>[0], number][] = [
    [{ port: 80, name: 'http-web' }, AppProtocol.HTTP11],
    [{ port: 80, name: 'HTTP' }, AppProtocol.HTTP11],
    [{ port: 80, name: 'web', appProtocol: 'http2' }, AppProtocol.HTTP2],
    [{ port: 80, name: 'http', appProtocol: 'kubernetes.io/h2c' }, AppProtocol.HTTP2],
    [{ port: 80, appProtocol: 'kubernetes.io/ws' }, AppProtocol.HTTP11],
    [{ port: 443, appProtocol: 'kubernetes.io/wss' }, AppProtocol.TLS],
    [{ port: 9090, name: 'grpc-api' }, AppProtocol.GRPC],
    [{ port: 8080, name: 'grpc-web-ui' }, AppProtocol.UNKNOWN],
    [{ port: 443, name: 'https' }, AppProtocol.TLS],
    [{ port: 5432, name: 'tcp-db' }, AppProtocol.TCP],
    [{ port: 3306 }, AppProtocol.TCP],
    [{ port: 3306, name: 'mysql' }, AppProtocol.UNKNOWN],
    [{ port: 53, name: 'dns', protocol: 'UDP' }, AppProtocol.UNKNOWN],
    [{ port: 8080 }, AppProtocol.UNKNOWN],
  ];
  for (const [p, want] of cases) assert.equal(appProtocolOfServicePort(p), want, JSON.stringify(p));
  assert.equal(appProtocolOfName('HTTPS'), AppProtocol.TLS);
  assert.equal(appProtocolOfName('mongo'), AppProtocol.UNKNOWN);
});
