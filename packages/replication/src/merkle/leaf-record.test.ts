import { encodeEntry, entryHashOf, Leaf } from './leaf-record';
import { sha256 } from './layout';

describe('leaf records', () => {
  it('an entry owns its memory, so a cached leaf never keeps a block of the shared Buffer pool alive', () => {
    const hash = sha256(Buffer.from('value'));
    const entry = encodeEntry('secret/data/app', hash);
    // A pool slice would sit in an ArrayBuffer much larger than itself.
    expect(entry.byteOffset).toBe(0);
    expect(entry.buffer.byteLength).toBe(entry.length);
    expect(entryHashOf(entry).equals(hash)).toBe(true);
  });

  it('a leaf encodes its entries in key order and decodes back to them', () => {
    const leaf = new Leaf();
    leaf.set('b', encodeEntry('b', sha256(Buffer.from('2'))));
    leaf.set('a', encodeEntry('a', sha256(Buffer.from('1'))));
    const back = Leaf.decode(leaf.encode());
    expect(back.keys()).toEqual(['a', 'b']);
    expect(back.get('b')?.equals(leaf.get('b') as Buffer)).toBe(true);
  });
});
