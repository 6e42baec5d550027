import type { StatusCause } from '../api-error.js';
import type { Strategy } from './strategy.js';
import type { KubeObject } from '../kube-object.js';
import { invalid, required } from '../validation/field-errors.js';
import { asObject, asString, objectField, setDefault } from '../validation/json-fields.js';
import { defaultPodTemplate, oneOf, validatePodTemplateSpec } from '../validation/pod-spec.js';
import { validateJobSpecCommon } from './job.js';
import { generationHooks } from './generation.js';

/**
 * batch/v1 CronJobs, after k8s.io/kubernetes `pkg/registry/batch/cronjob/strategy.go` (generation 1 on create,
 * bumped by spec changes, status kept on update), `pkg/apis/batch/v1/defaults.go` (`SetDefaults_CronJob`) and
 * `pkg/apis/batch/validation/validation.go` (`ValidateCronJobCreate`: a schedule of five fields or a
 * descriptor, a name short enough for the Jobs it creates, the job template's pods).
 */

/** Concurrent runs allowed, 3 finished and 1 failed Job kept (`SetDefaults_CronJob`). */
export const DEFAULT_CRON_JOB = {
  concurrencyPolicy: 'Allow',
  suspend: false,
  successfulJobsHistoryLimit: 3,
  failedJobsHistoryLimit: 1,
} as const;
/** Job names append 11 characters to the CronJob's, which must stay a 63-character label. */
const MAX_CRON_JOB_NAME_LENGTH = 52;
const CONCURRENCY_POLICIES = ['Allow', 'Forbid', 'Replace'];
const DESCRIPTORS = new Set(['@yearly', '@annually', '@monthly', '@weekly', '@daily', '@midnight', '@hourly']);

function defaultCronJob(obj: KubeObject): void {
  const spec = objectField(obj, 'spec');
  for (const [k, v] of Object.entries(DEFAULT_CRON_JOB)) setDefault(spec, k, v);
  defaultPodTemplate(objectField(objectField(objectField(spec, 'jobTemplate'), 'spec'), 'template'));
}

/** The schedule's form as robfig/cron's standard parser checks it, with its message. */
function scheduleError(schedule: string): string | undefined {
  if (schedule.startsWith('@'))
    return DESCRIPTORS.has(schedule) || schedule.startsWith('@every ')
      ? undefined
      : `unrecognized descriptor: ${schedule}`;
  if (/^(CRON_)?TZ=/.test(schedule)) return undefined;
  const fields = schedule
    .trim()
    .split(/\s+/)
    .filter((f) => f !== '');
  if (fields.length !== 5) return `expected exactly 5 fields, found ${fields.length}: [${fields.join(' ')}]`;
  const bad = fields.find((f) => !/^[0-9A-Za-z*?/,-]+$/.test(f));
  return bad === undefined ? undefined : `failed to parse int from ${bad}`;
}

function validateCronJob(obj: KubeObject): StatusCause[] {
  const spec = asObject(obj.spec) ?? {};
  const errs: StatusCause[] = [];
  const name = asString(obj.metadata.name) ?? '';
  if (name.length > MAX_CRON_JOB_NAME_LENGTH)
    errs.push(invalid('metadata.name', name, `must be no more than ${MAX_CRON_JOB_NAME_LENGTH} characters`));
  const schedule = asString(spec.schedule) ?? '';
  if (schedule === '') errs.push(required('spec.schedule'));
  else {
    const problem = scheduleError(schedule);
    if (problem !== undefined) errs.push(invalid('spec.schedule', schedule, problem));
    if (/^(CRON_)?TZ=/.test(schedule))
      errs.push(invalid('spec.schedule', schedule, 'cannot use TZ or CRON_TZ in schedule, use timeZone field instead'));
  }
  errs.push(...oneOf(spec.concurrencyPolicy, 'spec.concurrencyPolicy', CONCURRENCY_POLICIES));
  const jobSpec = asObject(asObject(spec.jobTemplate)?.spec) ?? {};
  errs.push(...validateJobSpecCommon(jobSpec, 'spec.jobTemplate.spec'));
  errs.push(...validatePodTemplateSpec(asObject(jobSpec.template) ?? {}, 'spec.jobTemplate.spec.template'));
  return errs;
}

export const cronJobStrategy: Strategy = {
  ...generationHooks(defaultCronJob, {}),
  validate: validateCronJob,
  validateUpdate: validateCronJob,
};
