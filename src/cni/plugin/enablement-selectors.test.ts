import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isMeshError } from '../../lib/errors.js';
import { ISTIO_DEFAULT_SELECTORS } from '../../../test/helpers/cni-network-config.js';
import { compileEnablementSelectors } from './enablement-selectors.js';

const configError = (message: RegExp) => (e: unknown) => isMeshError(e, 'CNI_ERR_CONFIG') && message.test(e.message);

test("Istio's default selectors: a labelled pod anywhere, or any pod not opted out in a labelled namespace", () => {
  const s = compileEnablementSelectors(ISTIO_DEFAULT_SELECTORS, 'enablement_selectors');
  const ambient = { 'istio.io/dataplane-mode': 'ambient' };
  assert.equal(s.selects(ambient, {}), true, 'pod label alone');
  assert.equal(s.selects({}, ambient), true, 'namespace label alone');
  assert.equal(s.selects({ app: 'web' }, ambient), true, 'other pod labels do not matter');
  assert.equal(s.selects({ 'istio.io/dataplane-mode': 'none' }, ambient), false, 'pod opt-out wins over the namespace');
  assert.equal(s.selects({}, {}), false, 'neither');
  assert.equal(s.selects({}, { 'istio.io/dataplane-mode': 'none' }), false, 'namespace opted out');
});

test('an empty selector matches everything, an empty or absent list nothing', () => {
  assert.equal(compileEnablementSelectors([{}], 'f').selects({}, {}), true);
  assert.equal(
    compileEnablementSelectors([{ podSelector: {}, namespaceSelector: null }], 'f').selects({ a: 'b' }, {}),
    true,
  );
  assert.equal(compileEnablementSelectors([], 'f').selects({}, {}), false);
  assert.equal(compileEnablementSelectors(undefined, 'f').selects({}, {}), false);
  assert.equal(compileEnablementSelectors(null, 'f').selects({}, {}), false);
});

test('In, NotIn, Exists and DoesNotExist as Kubernetes matches them; all requirements of a selector must hold', () => {
  const sel = (matchExpressions: unknown[], matchLabels?: Record<string, string>) =>
    compileEnablementSelectors([{ podSelector: { matchLabels, matchExpressions } }], 'f');
  assert.equal(sel([{ key: 'k', operator: 'In', values: ['a', 'b'] }]).selects({ k: 'b' }, {}), true);
  assert.equal(sel([{ key: 'k', operator: 'In', values: ['a'] }]).selects({}, {}), false);
  assert.equal(
    sel([{ key: 'k', operator: 'NotIn', values: ['a'] }]).selects({}, {}),
    true,
    'NotIn holds for an absent label',
  );
  assert.equal(sel([{ key: 'k', operator: 'Exists' }]).selects({ k: '' }, {}), true);
  assert.equal(sel([{ key: 'k', operator: 'DoesNotExist' }]).selects({ k: '' }, {}), false);
  assert.equal(
    sel([{ key: 'k', operator: 'Exists' }], { app: 'x' }).selects({ k: '1' }, {}),
    false,
    'matchLabels and matchExpressions are ANDed',
  );
  assert.equal(sel([{ key: 'toString', operator: 'Exists' }]).selects({}, {}), false, 'only own labels count');
});

test('an invalid selector is a config error naming its field', () => {
  assert.throws(
    () => compileEnablementSelectors({}, 'enablement_selectors'),
    configError(/^"enablement_selectors" must be a list/),
  );
  assert.throws(
    () =>
      compileEnablementSelectors(
        [{ podSelector: { matchExpressions: [{ key: 'k', operator: 'in', values: ['a'] }] } }],
        'enablement_selectors',
      ),
    configError(
      /"enablement_selectors\[0\]\.podSelector\.matchExpressions\[0\]\.operator" "in" is not a label selector operator/,
    ),
  );
  assert.throws(
    () =>
      compileEnablementSelectors(
        [{}, { namespaceSelector: { matchExpressions: [{ key: 'k', operator: 'NotIn' }] } }],
        'enablement_selectors',
      ),
    configError(
      /"enablement_selectors\[1\]\.namespaceSelector\.matchExpressions\[0\]\.values" must not be empty for operator NotIn/,
    ),
  );
  assert.throws(
    () =>
      compileEnablementSelectors(
        [{ podSelector: { matchExpressions: [{ key: 'k', operator: 'Exists', values: ['a'] }] } }],
        'f',
      ),
    configError(/must be empty for operator Exists/),
  );
  assert.throws(
    () => compileEnablementSelectors([{ podSelector: { matchLabels: { k: 1 } } }], 'f'),
    configError(/"f\[0\]\.podSelector\.matchLabels" must map label keys to string values/),
  );
  assert.throws(
    () => compileEnablementSelectors([{ podSelector: 'a=b' }], 'f'),
    configError(/"f\[0\]\.podSelector" must be a label selector object/),
  );
});
