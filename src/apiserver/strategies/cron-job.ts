import type { StatusCause } from '../api-error.js';
import type { Strategy } from './strategy.js';
import type { KubeObject } from '../kube-object.js';
import { invalid, required } from '../validation/field-errors.js';
import { asObject, asString, objectField, setDefault } from '../validation/json-fields.js';
import { defaultPodTemplate, oneOf, validatePodTemplateSpec } from '../validation/pod-spec.js';
import { parseCronSchedule } from '../../lib/cron-schedule.js';
import { isTimeZone } from '../../lib/zoned-time.js';
import { validateJobSpecCommon } from './job.js';
import { generationHooks } from './generation.js';

/**
 * batch/v1 CronJobs, after k8s.io/kubernetes `pkg/registry/batch/cronjob/strategy.go` (generation 1 on create,
 * bumped by spec changes, status kept on update), `pkg/apis/batch/v1/defaults.go` (`SetDefaults_CronJob`) and
 * `pkg/apis/batch/validation/validation.go` (`ValidateCronJobCreate`: a schedule the cron parser reads, a known
 * time zone, a name short enough for the Jobs it creates, the job template's pods).
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

function defaultCronJob(obj: KubeObject): void {
  const spec = objectField(obj, 'spec');
  for (const [k, v] of Object.entries(DEFAULT_CRON_JOB)) setDefault(spec, k, v);
  defaultPodTemplate(objectField(objectField(objectField(spec, 'jobTemplate'), 'spec'), 'template'));
}

/** `validateTimeZone`: an IANA zone by name, never empty and never `Local`. */
function timeZoneError(zone: string): string | undefined {
  if (zone === '') return 'timeZone must be nil or non-empty string';
  if (zone.toLowerCase() === 'local')
    return 'timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones';
  return isTimeZone(zone) ? undefined : `unknown time zone ${zone}`;
}

function validateCronJob(obj: KubeObject): StatusCause[] {
  const spec = asObject(obj.spec) ?? {};
  const errs: StatusCause[] = [];
  const name = asString(obj.metadata.name) ?? '';
  if (name.length > MAX_CRON_JOB_NAME_LENGTH)
    errs.push(invalid('metadata.name', name, `must be no more than ${MAX_CRON_JOB_NAME_LENGTH} characters`));
  const schedule = asString(spec.schedule) ?? '';
  if (schedule === '') errs.push(required('spec.schedule'));
  else if (/^(CRON_)?TZ=/.test(schedule))
    errs.push(invalid('spec.schedule', schedule, 'cannot use TZ or CRON_TZ in schedule, use timeZone field instead'));
  else {
    // The controller's own parser, robfig/cron's reading, so what is accepted here is what runs.
    const parsed = parseCronSchedule(schedule, 'UTC');
    if ('error' in parsed) errs.push(invalid('spec.schedule', schedule, parsed.error));
  }
  const zone = asString(spec.timeZone);
  const zoneProblem = zone === undefined ? undefined : timeZoneError(zone);
  if (zoneProblem !== undefined) errs.push(invalid('spec.timeZone', zone ?? '', zoneProblem));
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
