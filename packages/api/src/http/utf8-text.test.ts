import { randomBytes } from 'node:crypto';
import { utf8Text } from './utf8-text';

describe('utf8Text', () => {
  const text = (chars: string, length: number) => chars.repeat(Math.ceil(length / chars.length)).slice(0, length);

  it('decodes a large body as toString does, whatever character a piece would end in', () => {
    // One, two, three and four byte characters, shifted so that every kind falls on every cut.
    for (const chars of ['a', 'é', '€', '\u{1F511}', 'aé€\u{1F511}']) {
      for (let shift = 0; shift < 4; shift++) {
        const raw = Buffer.from('x'.repeat(shift) + text(chars, 70_000));
        expect(utf8Text(raw)).toBe(raw.toString('utf8'));
      }
    }
  });

  it('replaces invalid sequences as toString does, across the cuts too', () => {
    const pieces = [Buffer.from([0xe2, 0x82]), Buffer.from([0x80, 0x80, 0x80, 0x80, 0x80]), Buffer.from([0xf0, 0x9f, 0x94]), Buffer.from([0xff, 0xc3])];
    for (const bad of pieces) {
      for (let at = 65_530; at < 65_542; at++) {
        const raw = Buffer.concat([Buffer.from('a'.repeat(at)), bad, Buffer.from('é'.repeat(40_000))]);
        expect(utf8Text(raw)).toBe(raw.toString('utf8'));
      }
    }
    for (let i = 0; i < 20; i++) {
      const raw = randomBytes(200_000 + i);
      expect(utf8Text(raw)).toBe(raw.toString('utf8'));
    }
  });

  it('leaves no large text outside the heap, as toString does past about 1 MB', () => {
    const raw = Buffer.from(text('{"plaintext":"QUJD"},', 1_400_000));
    const before = process.memoryUsage().external;
    const kept = Array.from({ length: 5 }, () => utf8Text(raw));
    expect(process.memoryUsage().external - before).toBeLessThan(1_000_000);
    expect(kept[4]).toBe(raw.toString('utf8'));
  });
});
