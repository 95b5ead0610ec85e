import { StrongroomError } from '@strongroom/core';
import { decodeBase64, formatCiphertext, parseCiphertext } from './codec';

function message(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (err instanceof StrongroomError) return err.message;
    throw err;
  }
  return '';
}

describe('decodeBase64', () => {
  it('decodes standard padded base64 and skips line breaks', () => {
    expect(decodeBase64('f', 'aGVsbG8=').toString()).toBe('hello');
    expect(decodeBase64('f', 'aGVs\nbG8=\r\n').toString()).toBe('hello');
    expect(decodeBase64('f', '')).toHaveLength(0);
  });

  it.each(['aGVsbG8', 'aGV sbG8=', 'aGVs_G8=', 'aGVs-G8=', 'aG*sbG8=', 'aG=sbG8=', 'a===', '====='])('refuses %j, naming the field', (value) => {
    expect(message(() => decodeBase64('plaintext', value))).toContain('"plaintext"');
  });
});

describe('ciphertext format', () => {
  it('round trips', () => {
    const text = formatCiphertext(12, Buffer.from([1, 2, 3]));
    expect(text).toBe('vault:v12:AQID');
    expect(parseCiphertext(text)).toEqual({ version: 12, payload: Buffer.from([1, 2, 3]) });
  });

  it('reads v0 as 1', () => {
    expect(parseCiphertext('vault:v0:AQID').version).toBe(1);
  });

  it('refuses a version too large to be one', () => {
    expect(message(() => parseCiphertext('vault:v99999999999:AQID'))).toBe('invalid ciphertext: version number could not be decoded');
  });
});
