import { T0, badRequest, failure, kvRig } from './test-support/kv-harness';
import { subkeysOf } from './path-subkeys';

const secret = { a: 1, b: { c: 'x', d: { e: true, f: [1, 2] } }, g: null, h: {} };

describe('subkeys/', () => {
  it('returns the key tree with null leaves and the version metadata', async () => {
    const { h } = kvRig();
    await h.request('write', 'data/k', { data: secret });
    expect(await h.request('read', 'subkeys/k')).toEqual({
      data: {
        metadata: { created_time: T0, custom_metadata: null, deletion_time: '', destroyed: false, version: 1 },
        subkeys: { a: null, b: { c: null, d: { e: null, f: null } }, g: null, h: {} },
      },
    });
  });

  it('cuts the tree at depth', async () => {
    const { h } = kvRig();
    await h.request('write', 'data/k', { data: secret });
    expect((await h.request('read', 'subkeys/k', { depth: 1 }))?.data).toMatchObject({ subkeys: { a: null, b: null, g: null, h: null } });
    expect((await h.request('read', 'subkeys/k', { depth: '2' }))?.data).toMatchObject({ subkeys: { a: null, b: { c: null, d: null }, g: null, h: {} } });
    expect((await h.request('read', 'subkeys/k', { depth: 0 }))?.data).toMatchObject({ subkeys: { b: { d: { e: null } } } });
  });

  it('reads a given version', async () => {
    const { h } = kvRig();
    await h.request('write', 'data/k', { data: { old: 1 } });
    await h.request('write', 'data/k', { data: { new: 1 } });
    expect((await h.request('read', 'subkeys/k', { version: 1 }))?.data).toMatchObject({ subkeys: { old: null }, metadata: { version: 1 } });
  });

  it('answers 404 for a missing secret or version, and 404 with metadata for a deleted one', async () => {
    const { h } = kvRig();
    await failure(h.request('read', 'subkeys/none'), 404);
    await h.request('write', 'data/k', { data: { a: 1 } });
    await failure(h.request('read', 'subkeys/k', { version: 5 }), 404);
    await h.request('delete', 'data/k');
    expect(await h.request('read', 'subkeys/k')).toEqual({
      status: 404,
      data: { metadata: expect.objectContaining({ version: 1, deletion_time: T0 }), subkeys: null },
    });
  });

  it('refuses a bad depth or version', async () => {
    const { h } = kvRig();
    await h.request('write', 'data/k', { data: { a: 1 } });
    await badRequest(h.request('read', 'subkeys/k', { depth: -1 }), 'depth');
    await badRequest(h.request('read', 'subkeys/k', { depth: 'deep' }), 'depth');
    await badRequest(h.request('read', 'subkeys/k', { version: 'x' }), 'version');
  });
});

describe('subkeysOf', () => {
  it('keeps odd key names as plain keys', () => {
    const tree = subkeysOf(JSON.parse('{"__proto__": {"x": 1}, "constructor": 2}') as Record<string, unknown>, 0);
    expect(Object.hasOwn(tree, '__proto__')).toBe(true);
    expect(Object.getPrototypeOf(tree)).toBe(Object.prototype);
    expect(JSON.stringify(tree)).toBe('{"__proto__":{"x":null},"constructor":null}');
  });
});
