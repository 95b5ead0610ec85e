import { createHash } from 'node:crypto';
import { b64, badRequest, data, transitRig } from './test-support/transit-rig';

const NODE_NAMES: Record<string, string> = {
  'sha2-224': 'sha224', 'sha2-256': 'sha256', 'sha2-384': 'sha384', 'sha2-512': 'sha512',
  'sha3-224': 'sha3-224', 'sha3-256': 'sha3-256', 'sha3-384': 'sha3-384', 'sha3-512': 'sha3-512',
};

describe('hash(/:algorithm)', () => {
  it('defaults to sha2-256 and hex (FIPS 180-2 "abc" vector)', async () => {
    const { h } = transitRig();
    expect(data(await h.request('write', 'hash', { input: b64('abc') }))).toEqual({
      sum: 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
    });
  });

  it('sha3-256 of "abc" matches the FIPS 202 vector', async () => {
    const { h } = transitRig();
    expect(data(await h.request('write', 'hash/sha3-256', { input: b64('abc') }))['sum'])
      .toBe('3a985da74fe225b2045c172d6bd390bd855f086e3e9d525b46bfe24511431532');
  });

  it.each(Object.keys(NODE_NAMES))('%s in the body or the path, hex or base64', async (alg) => {
    const { h } = transitRig();
    const digest = createHash(NODE_NAMES[alg]!).update('some input').digest();
    expect(data(await h.request('write', 'hash', { input: b64('some input'), algorithm: alg }))['sum']).toBe(digest.toString('hex'));
    expect(data(await h.request('write', `hash/${alg}`, { input: b64('some input'), format: 'base64' }))['sum']).toBe(digest.toString('base64'));
  });

  it('the path segment wins over the body', async () => {
    const { h } = transitRig();
    const sum = data(await h.request('write', 'hash/sha2-512', { input: b64('x'), algorithm: 'sha2-224' }))['sum'];
    expect(sum).toBe(createHash('sha512').update('x').digest('hex'));
  });

  it('hashes the empty input', async () => {
    const { h } = transitRig();
    expect(data(await h.request('write', 'hash', { input: '' }))['sum']).toBe(createHash('sha256').digest('hex'));
  });

  it('needs no key, and creates none', async () => {
    const { h } = transitRig();
    await h.request('write', 'hash', { input: b64('x') });
    expect(await h.request('list', 'keys/')).toEqual({ data: { keys: [] } });
  });

  it('refuses an unknown algorithm (sha1 included), an unknown format, missing input and bad base64', async () => {
    const { h } = transitRig();
    await badRequest(h.request('write', 'hash', { input: b64('x'), algorithm: 'md5' }), 'algorithm');
    await badRequest(h.request('write', 'hash/sha1', { input: b64('x') }), 'algorithm');
    await badRequest(h.request('write', 'hash', { input: b64('x'), format: 'base32' }), 'format');
    await badRequest(h.request('write', 'hash', {}), 'input');
    await badRequest(h.request('write', 'hash', { input: 'abc' }), 'input');
  });
});
