/**
 * `amesh manifest generate`'s work, as istioctl's GenerateManifest (istio operator/pkg/render/manifest.go): merge
 * the inputs into one IstioOperator, then for each enabled component compute its chart's values, render the
 * chart's objects and apply the component's `k8s` settings. Several ingress gateways make one set, as istioctl
 * gathers a component's renderings. Nothing here reads a cluster.
 */
import type { RenderedObject } from './chart-helpers.js';
import { chartValues } from './chart-values.js';
import { applyComponentPatches } from './component-patches.js';
import { enabledComponents, type Component } from './components.js';
import { mergeIstioOperator, type InputFile } from './istio-operator.js';
import type { SetFlag } from './set-flag.js';
import { renderBase } from './render-base.js';
import { renderCni } from './render-cni.js';
import { renderIngressGateway } from './render-ingress-gateway.js';
import { renderIstiod } from './render-istiod.js';
import { renderZtunnel, type MeshSettings } from './render-ztunnel.js';
import { at, getString, type Tree } from './value-tree.js';

/** One component's objects. */
export interface ManifestSet {
  readonly component: Component;
  /** Its namespace (a gateway set's first entry's). */
  readonly namespace: string;
  readonly objects: readonly RenderedObject[];
}

export interface GeneratedManifest {
  /** The merged IstioOperator. */
  readonly iop: Readonly<Tree>;
  readonly sets: readonly ManifestSet[];
}

export interface GenerateInputs {
  readonly files: readonly InputFile[];
  readonly sets: readonly SetFlag[];
}

export function generateManifest(inputs: GenerateInputs): GeneratedManifest {
  const iop = mergeIstioOperator(inputs.files, inputs.sets);
  const revision = getString(iop, ['spec', 'values', 'revision']);
  const mesh: MeshSettings = {
    trustDomain: getString(iop, ['spec', 'values', 'meshConfig', 'trustDomain'], 'cluster.local'),
    clusterDomain: getString(iop, ['spec', 'values', 'global', 'proxy', 'clusterDomain'], 'cluster.local'),
  };
  const rendered = enabledComponents(iop).map((c): ManifestSet => {
    const values = chartValues(c, iop);
    let objects: RenderedObject[];
    switch (c.component.chart) {
      case 'base':
        objects = renderBase(values);
        break;
      case 'istiod':
        objects = renderIstiod(values, c.namespace);
        break;
      case 'cni':
        objects = renderCni(values, c.namespace);
        break;
      case 'ztunnel':
        objects = renderZtunnel(values, c.namespace, mesh);
        break;
      case 'ingress':
        objects = renderIngressGateway(values, c.namespace);
        break;
    }
    return { component: c.component, namespace: c.namespace, objects: applyComponentPatches(c, objects, revision) };
  });
  const sets: ManifestSet[] = [];
  for (const set of rendered) {
    const i = sets.findIndex((s) => s.component === set.component);
    if (i < 0) sets.push(set);
    else sets[i] = { ...sets[i]!, objects: [...sets[i]!.objects, ...set.objects] };
  }
  return { iop, sets };
}

/** The namespace Istio is installed into (metadata.namespace, from values.global.istioNamespace). */
export function istioNamespace(iop: Readonly<Tree>): string {
  return (at(iop, 'metadata.namespace') as string | undefined) || 'istio-system';
}
