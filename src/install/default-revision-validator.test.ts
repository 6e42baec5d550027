import { test } from 'node:test';
import assert from 'node:assert/strict';
import { defaultRevisionValidator } from './default-revision-validator.js';
import { mergeIstioOperator } from './istio-operator.js';
import { parseSetFlag } from './set-flag.js';

const iopOf = (...sets: string[]) => mergeIstioOperator([], sets.map(parseSetFlag));

test('the default revision gets istiod-default-validator for objects without istio.io/rev, Ignore until istiod serves, never pruned', () => {
  const o = defaultRevisionValidator(iopOf('profile=ambient'), false);
  assert.equal(o?.metadata.name, 'istiod-default-validator');
  const labels = o?.metadata.labels ?? {};
  assert.deepEqual(
    [labels['istio.io/rev'], labels['istio.io/tag'], labels['operator.istio.io/component']],
    ['default', 'default', 'Pilot'],
  );
  assert.equal(labels['install.operator.istio.io/owning-resource-not-pruned'], 'true');
  const [webhook] = o?.['webhooks'] as Record<string, unknown>[];
  assert.equal(webhook?.['name'], 'validation.istio.io');
  assert.equal(webhook?.['failurePolicy'], 'Ignore');
  assert.deepEqual(webhook?.['objectSelector'], {
    matchExpressions: [{ key: 'istio.io/rev', operator: 'DoesNotExist' }],
  });
  assert.deepEqual(webhook?.['clientConfig'], {
    service: { name: 'istiod', namespace: 'istio-system', path: '/validate' },
  });
});

test('a revision installed beside an existing default tag, or webhooks an operator manages, get no default validator', () => {
  assert.equal(defaultRevisionValidator(iopOf('revision=canary'), true), undefined);
  assert.equal(defaultRevisionValidator(iopOf('values.global.operatorManageWebhooks=true'), false), undefined);
  const first = defaultRevisionValidator(iopOf('revision=canary'), false);
  assert.equal(
    (first?.['webhooks'] as { clientConfig: { service: { name: string } } }[])[0]?.clientConfig.service.name,
    'istiod-canary',
  );
});
