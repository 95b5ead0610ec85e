import { RANDOM_MAX_BYTES } from './path-random';
import { badRequest, data, transitRig } from './test-support/transit-rig';

async function random(path: string, body: Record<string, unknown> = {}): Promise<string> {
  const { h } = transitRig();
  const resp = data(await h.request('write', path, body));
  expect(Object.keys(resp)).toEqual(['random_bytes']);
  return String(resp['random_bytes']);
}

const decoded = (text: string, format: BufferEncoding = 'base64'): Buffer => Buffer.from(text, format);

describe('random(/:source)(/:bytes)', () => {
  it('gives 32 bytes, base64, by default', async () => {
    const out = await random('random');
    expect(out).toMatch(/^[A-Za-z0-9+/]+=*$/);
    expect(decoded(out)).toHaveLength(32);
  });

  it('gives different bytes every time', async () => {
    expect(await random('random')).not.toBe(await random('random'));
  });

  it('takes bytes from the body or the path, the path winning', async () => {
    expect(decoded(await random('random', { bytes: 7 }))).toHaveLength(7);
    expect(decoded(await random('random', { bytes: '9' }))).toHaveLength(9);
    expect(decoded(await random('random/64'))).toHaveLength(64);
    expect(decoded(await random('random/64', { bytes: 8 }))).toHaveLength(64);
  });

  it('takes the source from the path, alone or before the byte count', async () => {
    expect(decoded(await random('random/platform'))).toHaveLength(32);
    expect(decoded(await random('random/all/16'))).toHaveLength(16);
    expect(decoded(await random('random/platform/5', { source: 'seal' }))).toHaveLength(5);
    expect(decoded(await random('random', { source: 'all', bytes: 3 }))).toHaveLength(3);
  });

  it('formats as hex when asked', async () => {
    const out = await random('random/12', { format: 'hex' });
    expect(out).toMatch(/^[0-9a-f]{24}$/);
  });

  it(`gives from 1 up to ${RANDOM_MAX_BYTES} bytes and refuses counts outside that range`, async () => {
    expect(decoded(await random('random', { bytes: 1 }))).toHaveLength(1);
    expect(decoded(await random(`random/${RANDOM_MAX_BYTES}`))).toHaveLength(RANDOM_MAX_BYTES);
    const { h } = transitRig();
    await badRequest(h.request('write', 'random', { bytes: 0 }), 'bytes');
    await badRequest(h.request('write', 'random', { bytes: -4 }), 'bytes');
    await badRequest(h.request('write', 'random/0'), 'bytes');
    await badRequest(h.request('write', 'random', { bytes: RANDOM_MAX_BYTES + 1 }), 'bytes');
    await badRequest(h.request('write', `random/all/${RANDOM_MAX_BYTES + 1}`), 'bytes');
    await badRequest(h.request('write', 'random/all/many'), 'bytes');
  });

  it('refuses the seal source, saying it is not available, and unknown sources', async () => {
    const { h } = transitRig();
    const msg = await badRequest(h.request('write', 'random/seal'), 'source');
    expect(msg).toContain('not available');
    await badRequest(h.request('write', 'random', { source: 'seal' }), 'source');
    await badRequest(h.request('write', 'random/seal/16'), 'source');
    await badRequest(h.request('write', 'random/hsm'), 'source');
  });

  it('refuses an unknown format', async () => {
    const { h } = transitRig();
    await badRequest(h.request('write', 'random', { format: 'base32' }), 'format');
  });

  it('needs no key, and creates none', async () => {
    const { h } = transitRig();
    await h.request('write', 'random');
    expect(await h.request('list', 'keys/')).toEqual({ data: { keys: [] } });
  });
});
