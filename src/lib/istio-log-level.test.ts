import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ameshLogLevel } from './istio-log-level.js';

test("Istio's --log_output_level becomes amesh's --log-level", () => {
  assert.equal(ameshLogLevel('default:info'), 'info');
  assert.equal(ameshLogLevel('default:debug,ads:warn'), 'debug,ads=warn');
  assert.equal(ameshLogLevel('info'), 'info');
  assert.equal(ameshLogLevel('default:none'), 'silent');
});
