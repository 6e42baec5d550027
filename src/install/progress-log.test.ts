import { test } from 'node:test';
import assert from 'node:assert/strict';
import { COMPONENTS } from './components.js';
import { ProgressLog } from './progress-log.js';

const [base, pilot, cni] = (['Base', 'Pilot', 'Cni'] as const).map((n) => COMPONENTS.find((c) => c.name === n));

test('without a terminal each new status is one line, and components finish in istioctl’s words', () => {
  let out = '';
  const log = new ProgressLog({ write: (s: string) => (out += s) });
  const b = log.start(base!);
  b.finished();
  const p = log.start(pilot!);
  const c = log.start(cni!);
  p.waiting(['Deployment/istio-system/istiod']);
  p.waiting(['Deployment/istio-system/istiod']);
  c.failed('resources not ready after 1s:\n  DaemonSet/istio-system/istio-cni-node');
  p.finished();
  log.pruning();
  log.complete();
  assert.equal(
    out,
    [
      '- Processing resources for Istio core.',
      '✔ Istio core installed ⛵️',
      '- Processing resources for Istiod.',
      '- Processing resources for CNI, Istiod.',
      '- Processing resources for CNI, Istiod. Waiting for Deployment/istio-system/istiod',
      '✘ CNI encountered an error: resources not ready after 1s:\n  DaemonSet/istio-system/istio-cni-node',
      '- Processing resources for Istiod. Waiting for Deployment/istio-system/istiod',
      '✔ Istiod installed 🧠',
      '- Pruning removed resources',
      '✔ Installation complete',
      '',
    ].join('\n'),
  );
});

test('on a terminal the status is one line redrawn in place, cut to the width, and cleared at the end', () => {
  let out = '';
  const log = new ProgressLog({ write: (s: string) => (out += s), isTTY: true, columns: 30 });
  const b = log.start(base!);
  b.finished();
  log.complete();
  assert.equal(
    out,
    '\r\x1b[2K\x1b[33m-\x1b[0m Processing resources for ...' +
      '\r\x1b[2K\x1b[32m✔\x1b[0m Istio core installed ⛵️\n' +
      '\r\x1b[2K\x1b[32m✔\x1b[0m Installation complete\n',
  );
});
