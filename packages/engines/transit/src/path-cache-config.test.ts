import { MemoryStorage } from '@strongroom/core';
import { badRequest, transitRig } from './test-support/transit-rig';

describe('cache-config', () => {
  it('reads size 0 (unlimited) by default', async () => {
    const { h } = transitRig();
    expect(await h.request('read', 'cache-config')).toEqual({ data: { size: 0 } });
  });

  it('takes 0 or at least 10', async () => {
    const { h } = transitRig();
    await badRequest(h.request('write', 'cache-config', { size: 9 }), 'size');
    await badRequest(h.request('write', 'cache-config', { size: -1 }), 'size');
    await badRequest(h.request('write', 'cache-config', { size: 'lots' }), 'size');
    expect((await h.request('write', 'cache-config', { size: 10 }))?.data).toEqual({ size: 10 });
    expect(await h.request('read', 'cache-config')).toEqual({ data: { size: 10 } });
    expect((await h.request('write', 'cache-config', { size: 0 }))?.data).toEqual({ size: 0 });
  });

  it('applies a new size when the mount is next loaded, and says so', async () => {
    const storage = new MemoryStorage();
    const first = transitRig({ storage });
    await first.h.request('read', 'cache-config');
    expect(first.backend.context.keys.activeCacheSize).toBe(0);
    const resp = await first.h.request('write', 'cache-config', { size: 10 });
    expect(resp?.warnings).toHaveLength(1);
    expect(first.backend.context.keys.activeCacheSize).toBe(0);

    const reloaded = transitRig({ storage });
    for (let i = 0; i < 15; i++) await reloaded.h.request('write', `keys/k${i}`);
    expect(reloaded.backend.context.keys.activeCacheSize).toBe(10);
    expect(reloaded.backend.context.keys.cachedKeys).toBe(10);
    // Evicted keys are read back from storage on demand.
    expect((await reloaded.h.request('read', 'keys/k0'))?.data).toMatchObject({ name: 'k0' });
  });

  it('keeps every key with size 0', async () => {
    const { h, backend } = transitRig();
    for (let i = 0; i < 15; i++) await h.request('write', `keys/k${i}`);
    expect(backend.context.keys.cachedKeys).toBe(15);
  });
});
