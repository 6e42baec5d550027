import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { parseRequestHead, parseResponseHead, parseTrailers } from './message-headers.js';
import type { HeaderField } from './header-block.js';
import { H2ErrorCode } from './frame.js';
import { H2Error } from './h2-error.js';

const isStreamProtocolError = (e: unknown): boolean =>
  e instanceof H2Error && e.streamId === 3 && e.code === H2ErrorCode.PROTOCOL_ERROR && e.origin === 'library';

describe('request and response heads (RFC 9113 §8.2, §8.3, §8.5)', () => {
  test('an HBONE CONNECT: :method and :authority, regular fields kept in order', () => {
    const head = parseRequestHead(3, [
      [':method', 'CONNECT'],
      [':authority', '10.0.0.1:8080'],
      ['baggage', 'k=v'],
      ['forwarded', 'for=10.0.0.2'],
    ]);
    assert.deepEqual(head, {
      method: 'CONNECT',
      authority: '10.0.0.1:8080',
      scheme: undefined,
      path: undefined,
      fields: [
        ['baggage', 'k=v'],
        ['forwarded', 'for=10.0.0.2'],
      ],
    });
  });

  test('a GET carries :scheme and :path', () => {
    assert.equal(
      parseRequestHead(3, [
        [':method', 'GET'],
        [':scheme', 'https'],
        [':path', '/'],
        [':authority', 'a'],
      ]).path,
      '/',
    );
  });

  const MALFORMED: [string, HeaderField[]][] = [
    [
      'CONNECT with :scheme',
      [
        [':method', 'CONNECT'],
        [':authority', 'a:1'],
        [':scheme', 'https'],
      ],
    ],
    [
      'CONNECT with :path',
      [
        [':method', 'CONNECT'],
        [':authority', 'a:1'],
        [':path', '/'],
      ],
    ],
    ['CONNECT without :authority', [[':method', 'CONNECT']]],
    [
      'extended CONNECT (:protocol, never enabled)',
      [
        [':method', 'CONNECT'],
        [':protocol', 'websocket'],
        [':authority', 'a:1'],
        [':scheme', 'https'],
        [':path', '/'],
      ],
    ],
    ['no :method', [[':authority', 'a:1']]],
    [
      'GET without :path',
      [
        [':method', 'GET'],
        [':scheme', 'https'],
      ],
    ],
    [
      'a repeated pseudo-header',
      [
        [':method', 'CONNECT'],
        [':authority', 'a:1'],
        [':authority', 'b:1'],
      ],
    ],
    [
      'a pseudo-header after a regular field',
      [
        [':method', 'CONNECT'],
        ['x', 'y'],
        [':authority', 'a:1'],
      ],
    ],
    [
      'a response pseudo-header in a request',
      [
        [':method', 'CONNECT'],
        [':authority', 'a:1'],
        [':status', '200'],
      ],
    ],
    [
      'an uppercase field name',
      [
        [':method', 'CONNECT'],
        [':authority', 'a:1'],
        ['Baggage', 'x'],
      ],
    ],
    [
      'a connection-specific field',
      [
        [':method', 'CONNECT'],
        [':authority', 'a:1'],
        ['connection', 'close'],
      ],
    ],
    [
      'te other than trailers',
      [
        [':method', 'CONNECT'],
        [':authority', 'a:1'],
        ['te', 'gzip'],
      ],
    ],
    [
      'a value with CR LF',
      [
        [':method', 'CONNECT'],
        [':authority', 'a:1'],
        ['x', 'a\r\nb'],
      ],
    ],
    [
      'a value with leading whitespace',
      [
        [':method', 'CONNECT'],
        [':authority', 'a:1'],
        ['x', ' a'],
      ],
    ],
  ];
  for (const [what, fields] of MALFORMED) {
    test(`malformed request, stream error PROTOCOL_ERROR: ${what}`, () => {
      assert.throws(() => parseRequestHead(3, fields), isStreamProtocolError);
    });
  }

  test('a response has one three-digit :status', () => {
    assert.deepEqual(
      parseResponseHead(3, [
        [':status', '200'],
        ['server', 'x'],
      ]),
      { status: 200, fields: [['server', 'x']] },
    );
    assert.throws(() => parseResponseHead(3, [['server', 'x']]), isStreamProtocolError);
    assert.throws(() => parseResponseHead(3, [[':status', '20']]), isStreamProtocolError);
    assert.throws(
      () =>
        parseResponseHead(3, [
          [':status', '200'],
          [':method', 'GET'],
        ]),
      isStreamProtocolError,
    );
  });

  test('trailers carry no pseudo-headers', () => {
    assert.deepEqual(parseTrailers(3, [['x', 'y']]), [['x', 'y']]);
    assert.throws(() => parseTrailers(3, [[':status', '200']]), isStreamProtocolError);
  });
});
