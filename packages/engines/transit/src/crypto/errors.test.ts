import { CryptoInputError } from './errors';

describe('CryptoInputError', () => {
  it('is an Error that carries the request field it is about', () => {
    const err = new CryptoInputError('salt_length', 'salt_length is invalid: -7');
    expect(err).toBeInstanceOf(Error);
    expect(err.name).toBe('CryptoInputError');
    expect(err.field).toBe('salt_length');
    expect(err.message).toBe('salt_length is invalid: -7');
  });
});
