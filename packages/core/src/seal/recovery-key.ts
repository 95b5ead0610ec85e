import { open, seal } from './aead';

/*
 * The recovery key opens nothing: it only proves that the operators holding its shares agree.
 * What is stored to check it is a fixed text sealed under it; the key is 256 random bits, so
 * the check gives nothing to guess against, and it works sealed or unsealed, without the
 * unsealer.
 */
const CHECK_TEXT = Buffer.from('strongroom recovery key check v1');
const CHECK_AAD = Buffer.from('core/recovery-check');

export function makeRecoveryCheck(recoveryKey: Buffer): Buffer {
  return seal(recoveryKey, CHECK_TEXT, CHECK_AAD);
}

export function opensRecoveryCheck(candidate: Buffer, check: Buffer): boolean {
  if (candidate.length !== 32) return false;
  try {
    return open(candidate, check, CHECK_AAD).equals(CHECK_TEXT);
  } catch {
    return false;
  }
}
