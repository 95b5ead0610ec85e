import { combine, split } from 'shamir-secret-sharing';
import { BadRequestError } from '../errors';

/**
 * Splits the root key into unseal key shares with an audited Shamir implementation. With a
 * single share the share is the root key itself, as Vault does.
 */
export async function splitRootKey(rootKey: Buffer, shares: number, threshold: number): Promise<Buffer[]> {
  validateShareCounts(shares, threshold);
  if (shares === 1) return [Buffer.from(rootKey)];
  return (await split(new Uint8Array(rootKey), shares, threshold)).map((s) => Buffer.from(s));
}

export async function combineShares(shares: Buffer[]): Promise<Buffer> {
  if (shares.length === 1) return Buffer.from(shares[0] as Buffer);
  return Buffer.from(await combine(shares.map((s) => new Uint8Array(s))));
}

export function validateShareCounts(shares: number, threshold: number, sharesField = 'secret_shares', thresholdField = 'secret_threshold'): void {
  if (!Number.isInteger(shares) || shares < 1 || shares > 255) {
    throw new BadRequestError(`invalid value for "${sharesField}": must be an integer from 1 to 255`);
  }
  if (!Number.isInteger(threshold) || threshold < 1 || threshold > shares) {
    throw new BadRequestError(`invalid value for "${thresholdField}": must be an integer from 1 to ${sharesField}`);
  }
  if (shares > 1 && threshold === 1) {
    throw new BadRequestError(`invalid value for "${thresholdField}": must be greater than one when there are several shares`);
  }
  if (shares === 1 && threshold !== 1) {
    throw new BadRequestError(`invalid value for "${thresholdField}": must be 1 when there is a single share`);
  }
}
