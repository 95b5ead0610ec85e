/**
 * JSON API errors. The SDK turns `error.code` into `err.code` and retries by status, so the
 * status and the body's shape are what matter; `reason` follows GCS's own values.
 */
export class Cloud3Error extends Error {
  override readonly name = 'Cloud3Error';

  constructor(
    readonly status: number,
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }

  body(): string {
    const { status: code, message, reason } = this;
    return JSON.stringify({ error: { code, message, errors: [{ message, domain: 'global', reason }] } });
  }
}

export const noSuchObject = (bucket: string, name: string): Cloud3Error =>
  new Cloud3Error(404, 'notFound', `No such object: ${bucket}/${name}`);
export const noSuchBucket = (): Cloud3Error => new Cloud3Error(404, 'notFound', 'The specified bucket does not exist.');
export const notFound = (): Cloud3Error => new Cloud3Error(404, 'notFound', 'Not Found');
export const badRequest = (message: string): Cloud3Error => new Cloud3Error(400, 'invalid', message);
export const conditionNotMet = (): Cloud3Error =>
  new Cloud3Error(412, 'conditionNotMet', 'At least one of the pre-conditions you specified did not hold.');
