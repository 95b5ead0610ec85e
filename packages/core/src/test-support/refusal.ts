import { StrongroomError } from '../errors';

/** Awaits a call expected to be refused and returns the error, whatever its status. */
export async function refusal(promise: Promise<unknown>): Promise<StrongroomError> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof StrongroomError) return err;
    throw err;
  }
  throw new Error('expected a refusal');
}
