/**
 * The API server's webhook admission, as kube-apiserver's MutatingAdmissionWebhook and ValidatingAdmissionWebhook
 * plugins run it (k8s.io/apiserver `pkg/admission/plugin/webhook/mutating/dispatcher.go` and
 * `validating/dispatcher.go`):
 * - mutating webhooks are called one after another, configurations by name and webhooks in order, each given the
 *   object as the ones before it left it; a JSONPatch in an answer is applied. Webhooks with
 *   `reinvocationPolicy: IfNeeded` are called once more when a later webhook changed the object;
 * - validating webhooks are called together, and every one must allow;
 * - a refusal is the webhook's Status, prefixed `admission webhook "<name>" denied the request`, with a code of at
 *   least 400; a call that fails (unreachable, timed out, TLS refused, a malformed answer) refuses the request with
 *   500 InternalError under `failurePolicy: Fail` and is logged and skipped under `Ignore`;
 * - a dry run is sent with `dryRun: true` (every webhook has declared `sideEffects` None or NoneOnDryRun, which the
 *   configuration's validation requires);
 * - the answers' warnings are returned to the client as `Warning` headers.
 */
import type { Logger } from '../../lib/log.js';
import { ApiError, STATUS_REASONS, type StatusReason } from '../api-error.js';
import type { UserInfo } from '../auth/user-info.js';
import { applyJsonPatch } from '../json-patch.js';
import type { KindInfo } from '../kind-info.js';
import type { KubeObject } from '../kube-object.js';
import { findKind } from '../kinds.js';
import { asObject, asString, objectsOf, type JsonObject } from '../validation/json-fields.js';
import {
  InvalidReviewResponse,
  negotiateReviewVersion,
  parseReviewResponse,
  reviewRequest,
  type AdmissionSubject,
  type ReviewResponse,
} from './admission-review.js';
import { callWebhook, CallError } from './webhook-caller.js';
import { exemptFromWebhooks, rulesCouldMatch, webhookMatch, type AdmissionOperation } from './webhook-rules.js';

const admissionKind = (kind: string): KindInfo =>
  findKind('admissionregistration.k8s.io', 'v1', `${kind.toLowerCase()}s`) as KindInfo;
const VALIDATING = admissionKind('ValidatingWebhookConfiguration');
const MUTATING = admissionKind('MutatingWebhookConfiguration');
const NAMESPACES = findKind('', 'v1', 'namespaces') as KindInfo;

/** The store as admission reads it. */
export interface AdmissionLookups {
  list(k: KindInfo, namespace?: string): readonly KubeObject[];
  find(k: KindInfo, namespace: string | undefined, name: string): KubeObject | undefined;
}

/** Who is asking, where the webhooks' (and the server's) warnings for this request go, and how it wants unknown fields treated. */
export interface AdmissionContext {
  readonly user: UserInfo;
  readonly warnings: string[];
  /**
   * The request's `fieldValidation` (kubectl's `--validate`): fields a kind's schema does not know are dropped
   * silently (`Ignore`), dropped with a warning each (`Warn`, kube-apiserver's default), or refuse the request
   * (`Strict`). Writes without a context (the server's own) ignore them.
   */
  readonly fieldValidation?: FieldValidation;
  /**
   * The kind at the version the request named, when that is another served version of the stored kind (a write at
   * `networking.istio.io/v1alpha3` of a kind stored at v1): webhooks' rules are matched against that version, and
   * the review names it as the request's kind, as kube-apiserver does before it converts.
   */
  readonly requestKind?: KindInfo;
}

export type FieldValidation = 'Ignore' | 'Warn' | 'Strict';

/** One write as admission sees it. */
export interface AdmissionAttributes extends AdmissionSubject {
  readonly context: AdmissionContext;
}

interface Hook {
  readonly webhook: JsonObject;
  readonly name: string;
}

function refused(name: string, r: ReviewResponse): ApiError {
  const s = r.status ?? {};
  const prefix = `admission webhook "${name}" denied the request`;
  const why = s.message !== undefined && s.message !== '' ? s.message : s.reason;
  const message = why !== undefined && why !== '' ? `${prefix}: ${why}` : `${prefix} without explanation`;
  const code = Math.max(s.code ?? 400, 400);
  const byReason = s.reason !== undefined && s.reason in STATUS_REASONS ? (s.reason as StatusReason) : undefined;
  const byCode = (Object.keys(STATUS_REASONS) as StatusReason[]).find((r) => STATUS_REASONS[r] === code);
  return new ApiError(byReason ?? byCode ?? 'BadRequest', message);
}

function callFailed(name: string, e: unknown): ApiError {
  const why =
    e instanceof InvalidReviewResponse
      ? `received invalid webhook response: ${e.message}`
      : `failed to call webhook: ${e instanceof Error ? e.message : String(e)}`;
  const cause = `failed calling webhook "${name}": ${why}`;
  return new ApiError('InternalError', `Internal error occurred: ${cause}`, {
    causes: [{ reason: '', message: cause }],
  });
}

export class WebhookAdmission {
  constructor(
    private readonly lookups: AdmissionLookups,
    private readonly log: Logger,
  ) {}

  /** Whether some configured webhook's rules name this kind, subresource and operation (before selectors). */
  interested(kind: KindInfo, subresource: string | undefined, operation: AdmissionOperation): boolean {
    if (exemptFromWebhooks(kind)) return false;
    const probe = { kind, subresource, operation };
    return [VALIDATING, MUTATING].some((k) =>
      this.lookups.list(k).some((c) => objectsOf(c.webhooks).some((w) => rulesCouldMatch(w, probe))),
    );
  }

  /** The object after every matching mutating webhook; throws the refusal or a failed call under Fail. */
  async mutate(a: AdmissionAttributes): Promise<KubeObject | undefined> {
    const hooks = this.hooks(MUTATING);
    if (hooks.length === 0 || a.object === undefined) return a.object;
    let current = a.object;
    /** IfNeeded webhooks, with the object as each left it: one changed after it is called again, once. */
    const reinvocable: { hook: Hook; saw: KubeObject }[] = [];
    for (const hook of hooks) {
      current = await this.mutateOnce(hook, { ...a, object: current });
      if (hook.webhook.reinvocationPolicy === 'IfNeeded') reinvocable.push({ hook, saw: current });
    }
    for (const { hook, saw } of reinvocable)
      if (JSON.stringify(saw) !== JSON.stringify(current))
        current = await this.mutateOnce(hook, { ...a, object: current });
    return current;
  }

  /** Resolves when every matching validating webhook allows the write; throws the first refusal otherwise. */
  async validate(a: AdmissionAttributes): Promise<void> {
    const results = await Promise.all(
      this.hooks(VALIDATING).map(async (hook) => {
        try {
          const r = await this.call(hook, a, false);
          return r === undefined || r.allowed ? undefined : refused(hook.name, r);
        } catch (e) {
          return e instanceof Error ? e : new Error(String(e));
        }
      }),
    );
    const first = results.find((r) => r !== undefined);
    if (first !== undefined) throw first;
  }

  private async mutateOnce(hook: Hook, a: AdmissionAttributes & { object: KubeObject }): Promise<KubeObject> {
    const r = await this.call(hook, a, true);
    if (r === undefined) return a.object;
    if (!r.allowed) throw refused(hook.name, r);
    if (r.patch === undefined) return a.object;
    try {
      const patched = applyJsonPatch(a.object, JSON.parse(r.patch.toString('utf8')) as unknown);
      return { ...patched, apiVersion: a.object.apiVersion, kind: a.object.kind };
    } catch (e) {
      return this.failed(hook, new InvalidReviewResponse(`the patch does not apply: ${String(e)}`), a.object);
    }
  }

  /** The webhook's answer, or undefined when it does not apply or failed open. */
  private async call(hook: Hook, a: AdmissionAttributes, mutating: boolean): Promise<ReviewResponse | undefined> {
    const match = webhookMatch(hook.webhook, {
      kind: a.kind,
      subresource: a.subresource,
      operation: a.operation,
      object: a.object,
      oldObject: a.oldObject,
      namespaceLabels: a.namespace === undefined ? undefined : this.namespaceLabels(a.namespace),
    });
    if (match === undefined) return undefined;
    const version = negotiateReviewVersion(hook.webhook.admissionReviewVersions);
    if (version === undefined)
      return this.failed(hook, new InvalidReviewResponse('no admissionReviewVersions this server speaks'), undefined);
    const { uid, body } = reviewRequest(
      {
        kind: a.kind,
        version: match.version,
        subresource: a.subresource,
        operation: a.operation,
        namespace: a.namespace,
        name: a.name,
        object: a.object,
        oldObject: a.oldObject,
        dryRun: a.dryRun,
        user: a.context.user,
      },
      version,
    );
    try {
      const answer = await callWebhook(hook.webhook, body, {
        find: (k, ns, name) => this.lookups.find(k, ns, name),
        listInNamespace: (k, ns) => this.lookups.list(k, ns),
      });
      const r = parseReviewResponse(answer, uid, version, mutating);
      a.context.warnings.push(...r.warnings);
      return r;
    } catch (e) {
      if (!(e instanceof CallError || e instanceof InvalidReviewResponse)) throw e;
      return this.failed(hook, e, undefined);
    }
  }

  /** A failed call: refuses under `failurePolicy: Fail`, else is logged and yields `fallback`. */
  private failed<T>(hook: Hook, e: CallError | InvalidReviewResponse, fallback: T): T {
    const err = callFailed(hook.name, e);
    if (hook.webhook.failurePolicy !== 'Ignore') throw err;
    this.log.warn(
      { webhook: hook.name, err: err.message },
      'webhook call failed; failurePolicy Ignore lets the request through',
    );
    return fallback;
  }

  private hooks(k: KindInfo): Hook[] {
    return [...this.lookups.list(k)]
      .sort((x, y) => ((x.metadata.name ?? '') < (y.metadata.name ?? '') ? -1 : 1))
      .flatMap((c) => objectsOf(c.webhooks).map((webhook) => ({ webhook, name: asString(webhook.name) ?? '' })));
  }

  private namespaceLabels(namespace: string): Record<string, string> | undefined {
    const ns = this.lookups.find(NAMESPACES, undefined, namespace);
    return asObject(ns?.metadata.labels) as Record<string, string> | undefined;
  }
}
