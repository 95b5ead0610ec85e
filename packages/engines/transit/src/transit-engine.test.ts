import { Backend, FakeClock, silentLogger } from '@strongroom/core';
import { transitEngine } from './index';
import { encrypt, failure, transitRig } from './test-support/transit-rig';

describe('transitEngine', () => {
  it('is a secret engine of type transit whose backend is a Backend', () => {
    expect(transitEngine.type).toBe('transit');
    expect(transitEngine.kind).toBe('secret');
    const backend = transitEngine.create({ clock: new FakeClock(), logger: silentLogger });
    expect(backend).toBeInstanceOf(Backend);
    expect(backend.type).toBe('transit');
  });

  it('keeps each mount\'s keys and cache apart', async () => {
    const a = transitRig();
    const b = transitRig();
    await a.h.request('write', 'keys/k');
    const ct = await encrypt(a.h, 'k', 'mount a');
    await b.h.request('write', 'keys/k');
    await failure(b.h.request('write', 'decrypt/k', { ciphertext: ct }), 400);
  });

  it('routes only transit paths', async () => {
    const { h } = transitRig();
    await failure(h.request('read', 'nothing/here'), 404);
  });
});
