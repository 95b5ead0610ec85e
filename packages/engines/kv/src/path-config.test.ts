import { badRequest, kvRig } from './test-support/kv-harness';

describe('config', () => {
  it('reads the defaults with exactly Vault\'s keys', async () => {
    const { h } = kvRig();
    expect(await h.request('read', 'config')).toEqual({ data: { cas_required: false, delete_version_after: '0s', max_versions: 0 } });
  });

  it('writes and reads back, printing the duration the way Go does', async () => {
    const { h } = kvRig();
    expect(await h.request('write', 'config', { max_versions: 7, cas_required: true, delete_version_after: '3h' })).toBeNull();
    expect(await h.request('read', 'config')).toEqual({ data: { cas_required: true, delete_version_after: '3h0m0s', max_versions: 7 } });
    await h.request('write', 'config', { delete_version_after: 90 });
    expect((await h.request('read', 'config'))?.data).toMatchObject({ delete_version_after: '1m30s', max_versions: 7, cas_required: true });
    await h.request('write', 'config', { delete_version_after: '-1s' });
    expect((await h.request('read', 'config'))?.data).toMatchObject({ delete_version_after: '-1s' });
    await h.request('write', 'config', { delete_version_after: '0s' });
    expect((await h.request('read', 'config'))?.data).toMatchObject({ delete_version_after: '0s' });
  });

  it('changes only the fields given, accepting Vault\'s lenient input forms', async () => {
    const { h } = kvRig();
    await h.request('write', 'config', { max_versions: '4', cas_required: 'true' });
    await h.request('write', 'config', { max_versions: 5 });
    expect((await h.request('read', 'config'))?.data).toEqual({ cas_required: true, delete_version_after: '0s', max_versions: 5 });
  });

  it('commits no secret change', async () => {
    const { h, changes } = kvRig();
    await h.request('write', 'config', { max_versions: 4 });
    expect(changes).toEqual([]);
  });

  it('names the field for bad input and changes nothing', async () => {
    const { h } = kvRig();
    await badRequest(h.request('write', 'config', { max_versions: -1 }), 'max_versions');
    await badRequest(h.request('write', 'config', { max_versions: 2.5 }), 'max_versions');
    await badRequest(h.request('write', 'config', { cas_required: 'sometimes' }), 'cas_required');
    await badRequest(h.request('write', 'config', { delete_version_after: '3 hours' }), 'delete_version_after');
    await badRequest(h.request('write', 'config', { max_versions: 3, delete_version_after: true }), 'delete_version_after');
    expect((await h.request('read', 'config'))?.data).toEqual({ cas_required: false, delete_version_after: '0s', max_versions: 0 });
  });

  it('warns about unknown fields', async () => {
    const { h } = kvRig();
    const resp = await h.request('write', 'config', { max_version: 3 });
    expect(resp?.warnings?.[0]).toContain('max_version');
  });
});
