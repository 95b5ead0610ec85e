import { ownedCopy } from './owned-copy';

describe('ownedCopy', () => {
  it('copies into memory of its own, not a slice of the shared pool', () => {
    const small = Buffer.from('a small value');
    expect(small.buffer.byteLength).toBeGreaterThan(small.length); // the pool, which this guards against
    const copy = ownedCopy(small);
    expect(copy.equals(small)).toBe(true);
    expect(copy.byteOffset).toBe(0);
    expect(copy.buffer.byteLength).toBe(small.length);
    small.fill(0);
    expect(copy.toString()).toBe('a small value');
  });

  it('copies an empty value', () => {
    expect(ownedCopy(Buffer.alloc(0)).length).toBe(0);
  });
});
