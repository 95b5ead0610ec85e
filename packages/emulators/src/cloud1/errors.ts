/**
 * Errors the emulated services answer with. Each carries the provider's own error code and HTTP
 * status, because SDK clients turn exactly those into exception names (`NoSuchEntity` becomes
 * `NoSuchEntityException`, unmodelled codes keep their code as the name).
 */
export type ErrorType = 'Sender' | 'Receiver';

export class Cloud1Error extends Error {
  override readonly name = 'Cloud1Error';

  constructor(
    readonly code: string,
    readonly status: number,
    message: string,
    readonly type: ErrorType = 'Sender',
  ) {
    super(message);
  }
}

export const noSuchEntity = (message: string): Cloud1Error => new Cloud1Error('NoSuchEntity', 404, message);
export const entityAlreadyExists = (message: string): Cloud1Error =>
  new Cloud1Error('EntityAlreadyExists', 409, message);
export const limitExceeded = (message: string): Cloud1Error => new Cloud1Error('LimitExceeded', 409, message);
export const deleteConflict = (message: string): Cloud1Error => new Cloud1Error('DeleteConflict', 409, message);
export const validationError = (message: string): Cloud1Error => new Cloud1Error('ValidationError', 400, message);
export const malformedPolicy = (message: string): Cloud1Error =>
  new Cloud1Error('MalformedPolicyDocument', 400, message);
export const accessDenied = (message: string): Cloud1Error => new Cloud1Error('AccessDenied', 403, message);
export const invalidClientTokenId = (): Cloud1Error =>
  new Cloud1Error('InvalidClientTokenId', 403, 'The security token included in the request is invalid.');
export const expiredToken = (): Cloud1Error =>
  new Cloud1Error('ExpiredToken', 403, 'The security token included in the request is expired');
export const signatureDoesNotMatch = (message?: string): Cloud1Error =>
  new Cloud1Error(
    'SignatureDoesNotMatch',
    403,
    message ??
      'The request signature we calculated does not match the signature you provided. ' +
        'Check your AWS Secret Access Key and signing method. Consult the service documentation for details.',
  );
export const incompleteSignature = (message: string): Cloud1Error =>
  new Cloud1Error('IncompleteSignature', 400, message);
export const missingAuthenticationToken = (): Cloud1Error =>
  new Cloud1Error('MissingAuthenticationToken', 403, 'Request is missing Authentication Token');
export const invalidAction = (action: string, version: string): Cloud1Error =>
  new Cloud1Error('InvalidAction', 400, `Could not find operation ${action} for version ${version}`);
