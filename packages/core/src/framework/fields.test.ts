import { BadRequestError } from '../errors';
import { convertField } from './fields';

describe('convertField', () => {
  it('refuses text with a lone surrogate in every text type, naming the field', () => {
    // JSON.parse('"\ud800"') yields such a string; encodeURIComponent and UTF-8 storage cannot take it.
    const lone = 'a\ud800b';
    const cases: Array<[Parameters<typeof convertField>[1], unknown]> = [
      [{ type: 'string' }, lone], [{ type: 'lowercase-string' }, '\udfff'], [{ type: 'comma-list' }, `x,${lone}`],
      [{ type: 'string-list' }, ['x', lone]], [{ type: 'string-list' }, lone], [{ type: 'string-map' }, { k: lone }],
      [{ type: 'string-map' }, { [lone]: 'v' }],
    ];
    for (const [schema, value] of cases) {
      expect(() => convertField('name', schema, value)).toThrow(BadRequestError);
      expect(() => convertField('name', schema, value)).toThrow(/"name".*lone surrogate/);
    }
  });

  it('takes any well-formed text, astral characters included', () => {
    expect(convertField('name', { type: 'string' }, 'ключ-🔑')).toBe('ключ-🔑');
    expect(convertField('name', { type: 'comma-list' }, 'a,🔑')).toEqual(['a', '🔑']);
    expect(convertField('name', { type: 'string-map' }, { '🔑': 'é' })).toEqual({ '🔑': 'é' });
  });
});
