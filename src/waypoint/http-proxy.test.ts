import { test } from 'node:test';
import assert from 'node:assert/strict';
import { shadowHost } from './http-proxy.js';

test("a mirrored request's host gets -shadow before its port, as Envoy's shadow writer adds it", () => {
  assert.equal(shadowHost('reviews.shop'), 'reviews.shop-shadow');
  assert.equal(shadowHost('reviews.shop:9080'), 'reviews.shop-shadow:9080');
  assert.equal(shadowHost('10.96.0.1'), '10.96.0.1-shadow');
  assert.equal(shadowHost('[fd00::1]:80'), '[fd00::1]-shadow:80');
});
