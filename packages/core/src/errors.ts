import { StrongroomError } from '@strongroom/base';

export { StrongroomError };

/** The request is malformed or names a bad value; the message names the field and the rule. */
export class BadRequestError extends StrongroomError {
  constructor(message: string, options?: { cause?: unknown; details?: readonly string[] }) {
    super('bad_request', 400, message, options);
  }
}

export class PermissionDeniedError extends StrongroomError {
  constructor(message = 'permission denied') {
    super('permission_denied', 403, message);
  }
}

export class NotFoundError extends StrongroomError {
  constructor(message = '') {
    super('not_found', 404, message);
  }
}

export class UnsupportedOperationError extends StrongroomError {
  constructor(message = 'unsupported operation') {
    super('unsupported_operation', 405, message);
  }
}

export class UnsupportedMediaTypeError extends StrongroomError {
  constructor(message: string) {
    super('unsupported_media_type', 415, message);
  }
}

export class PayloadTooLargeError extends StrongroomError {
  constructor(limit: number) {
    super('payload_too_large', 413, `request body is larger than the limit of ${limit} bytes`);
  }
}

export class SealedError extends StrongroomError {
  constructor(message = 'Vault is sealed') {
    super('sealed', 503, message);
  }
}

/** This node is a standby and could not hand the request to the active node (none is known yet). */
export class StandbyError extends StrongroomError {
  constructor(message = 'this node is a standby and no active node is known yet; retry shortly', options?: { cause?: unknown }) {
    super('standby', 503, message, options);
  }
}

export class NotInitializedError extends StrongroomError {
  constructor() {
    super('not_initialized', 503, 'server is not initialized: initialize it through sys/init (strongroom operator init)');
  }
}

/** A compare-and-set or check failed; the caller may retry with fresh state. */
export class ConflictError extends StrongroomError {
  constructor(message: string) {
    super('conflict', 400, message);
  }
}

/** A fault of ours, not of the caller: logged in full, answered with a generic 500. */
export class InternalError extends StrongroomError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('internal', 500, message, options);
  }
}
