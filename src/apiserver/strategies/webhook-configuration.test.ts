import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeObject } from '../kube-object.js';
import {
  mutatingWebhookConfigurationStrategy,
  validatingWebhookConfigurationStrategy,
} from './webhook-configuration.js';

const config = (kind: string, webhooks: unknown[]): KubeObject => ({
  apiVersion: 'admissionregistration.k8s.io/v1',
  kind,
  metadata: { name: 'istio-validator-istio-system' },
  webhooks,
});
const WEBHOOK = {
  name: 'rev.validation.istio.io',
  clientConfig: { service: { name: 'istiod', namespace: 'istio-system', path: '/validate' } },
  rules: [{ operations: ['CREATE'], apiGroups: ['security.istio.io'], apiVersions: ['*'], resources: ['*'] }],
  sideEffects: 'None',
  admissionReviewVersions: ['v1'],
};

test("webhook configurations are stored with Kubernetes' defaults, a mutating one's reinvocation policy too", () => {
  const v = config('ValidatingWebhookConfiguration', [structuredClone(WEBHOOK)]);
  validatingWebhookConfigurationStrategy.prepareForCreate!(v);
  assert.deepEqual(v.webhooks, [
    {
      ...WEBHOOK,
      clientConfig: { service: { ...WEBHOOK.clientConfig.service, port: 443 } },
      rules: [{ ...WEBHOOK.rules[0], scope: '*' }],
      failurePolicy: 'Fail',
      matchPolicy: 'Equivalent',
      namespaceSelector: {},
      objectSelector: {},
      timeoutSeconds: 10,
    },
  ]);
  assert.deepEqual(validatingWebhookConfigurationStrategy.validate!(v), []);
  const m = config('MutatingWebhookConfiguration', [structuredClone(WEBHOOK)]);
  mutatingWebhookConfigurationStrategy.prepareForCreate!(m);
  assert.equal((m.webhooks as Record<string, unknown>[])[0]!['reinvocationPolicy'], 'Never');
});

test('webhook configurations: a short or repeated name, no target or two, missing side effects and review versions, a long timeout are refused', () => {
  const bad = config('ValidatingWebhookConfiguration', [
    { ...WEBHOOK, name: 'validation.istio', sideEffects: undefined, admissionReviewVersions: [] },
    { ...WEBHOOK, clientConfig: { url: 'https://x', service: WEBHOOK.clientConfig.service }, timeoutSeconds: 31 },
    { ...WEBHOOK, rules: [{ operations: ['PATCH'] }] },
  ]);
  validatingWebhookConfigurationStrategy.prepareForCreate!(bad);
  assert.deepEqual(
    validatingWebhookConfigurationStrategy.validate!(bad).map((c) => [c.field, c.message]),
    [
      [
        'webhooks[0].name',
        'Invalid value: "validation.istio": should be a domain with at least three segments separated by dots',
      ],
      ['webhooks[0].admissionReviewVersions', 'Required value: must specify one of v1, v1beta1'],
      ['webhooks[0].sideEffects', 'Required value'],
      ['webhooks[1].clientConfig', 'Required value: exactly one of url or service is required'],
      ['webhooks[1].timeoutSeconds', 'Invalid value: 31: the timeout value must be between 1 and 30 seconds'],
      ['webhooks[2].name', 'Duplicate value: "rev.validation.istio.io"'],
      [
        'webhooks[2].rules[0].operations',
        'Unsupported value: "PATCH": supported values: "*", "CREATE", "UPDATE", "DELETE", "CONNECT"',
      ],
    ],
  );
});
