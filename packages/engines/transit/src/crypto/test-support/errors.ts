import { CryptoInputError } from '../errors';

/** What `fn` throws; fails the test if it returns normally. */
export function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error('expected an exception');
}

/** Expects a CryptoInputError for `field` whose message names the field (and matches `pattern`). */
export function expectInputError(fn: () => unknown, field: string, pattern?: RegExp): void {
  const err = thrown(fn);
  expect(err).toBeInstanceOf(CryptoInputError);
  expect((err as CryptoInputError).field).toBe(field);
  expect((err as Error).message).toContain(field);
  if (pattern) expect((err as Error).message).toMatch(pattern);
}
