import { badRequest, transitRig } from './test-support/transit-rig';

describe('config/keys', () => {
  it('reads disable_upsert false by default and stores changes', async () => {
    const { h } = transitRig();
    expect(await h.request('read', 'config/keys')).toEqual({ data: { disable_upsert: false } });
    expect(await h.request('write', 'config/keys', { disable_upsert: true })).toEqual({ data: { disable_upsert: true } });
    expect(await h.request('read', 'config/keys')).toEqual({ data: { disable_upsert: true } });
    await h.request('write', 'config/keys', {});
    expect(await h.request('read', 'config/keys')).toEqual({ data: { disable_upsert: true } });
  });

  it('refuses a value that is not a boolean', async () => {
    const { h } = transitRig();
    await badRequest(h.request('write', 'config/keys', { disable_upsert: 'never' }), 'disable_upsert');
  });
});
