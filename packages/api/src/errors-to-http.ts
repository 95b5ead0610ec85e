import { StrongroomError, type Logger } from '@strongroom/core';

export interface ErrorReply {
  status: number;
  body: { errors: string[] };
}

/**
 * The one place that turns a failure into Vault's `{"errors": [...]}`. Known errors carry their
 * own status and message; anything else is our fault: logged in full, answered with a 500 whose
 * message leaks nothing of the request.
 */
export function errorReply(err: unknown, logger: Logger, requestId: string): ErrorReply {
  if (err instanceof StrongroomError && err.status < 500) {
    const errors = err.message === '' ? [] : [err.message, ...err.details];
    return { status: err.status, body: { errors } };
  }
  if (err instanceof StrongroomError && err.code !== 'internal') {
    return { status: err.status, body: { errors: [err.message] } };
  }
  logger.error('request failed', { request_id: requestId, err: err instanceof Error ? err.stack ?? err.message : String(err) });
  return { status: 500, body: { errors: [`internal error; request ${requestId} is described in the server log`] } };
}
