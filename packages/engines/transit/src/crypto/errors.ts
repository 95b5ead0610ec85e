/**
 * A request carried something the crypto layer cannot use: a bad option, a malformed signature or
 * ciphertext, a key of the wrong kind. The HTTP layer turns it into a 400; anything else thrown
 * from this folder is a server fault. `field` is the Vault request field the problem came from,
 * and every message names it so that a caller reading only the text knows what to fix.
 */
export class CryptoInputError extends Error {
  readonly field: string;

  constructor(field: string, message: string) {
    super(message);
    this.name = 'CryptoInputError';
    this.field = field;
  }
}
