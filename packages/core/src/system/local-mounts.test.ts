import type { MountEntry } from '../mounts/mount-table';
import { storeEngine } from '../test-support/store-engine';
import { data, rig, type Rig } from '../testing';

async function table(r: Rig, key: string): Promise<MountEntry[]> {
  const raw = await r.core.barrier.get(key);
  return raw ? (JSON.parse(raw.toString('utf8')) as MountEntry[]) : [];
}

const paths = (entries: MountEntry[]) => entries.map((e) => e.path).sort();

describe('local mounts', () => {
  it('keeps local secrets engines and auth methods in their own tables, lists them as local, and reloads them', async () => {
    const r = await rig({ engines: [storeEngine(), storeEngine('userpass-like')] });
    await r.ok('update', 'sys/mounts/here', r.root, { type: 'store', local: true });
    await r.ok('update', 'sys/mounts/everywhere', r.root, { type: 'store' });
    await r.ok('update', 'here/x', r.root, { v: 1 });
    expect(paths(await table(r, 'core/local-mounts'))).toEqual(['here/']);
    expect(paths(await table(r, 'core/mounts'))).not.toContain('here/');
    expect(paths(await table(r, 'core/mounts'))).toContain('everywhere/');
    const listed = data(await r.ok('read', 'sys/mounts', r.root));
    expect(listed['here/']).toMatchObject({ type: 'store', local: true });
    expect(listed['everywhere/']).toMatchObject({ local: false });

    await r.restart();
    expect(data(await r.ok('read', 'here/x', r.root))).toEqual({ v: 1 });
    expect(data(await r.ok('read', 'sys/mounts/here', r.root))).toMatchObject({ local: true });
    // A change to one table leaves the other as it was, also after a reload.
    const shared = await r.storage.get('core/mounts');
    await r.ok('update', 'sys/mounts/also-here', r.root, { type: 'store', local: true });
    expect(await r.storage.get('core/mounts')).toEqual(shared);
    const local = await r.storage.get('core/local-mounts');
    await r.ok('delete', 'sys/mounts/everywhere', r.root);
    expect(await r.storage.get('core/local-mounts')).toEqual(local);
  });

  it('keeps local auth methods in core/local-auth', async () => {
    const r = await rig({ engines: [{ ...storeEngine('pass'), kind: 'auth' }] });
    await r.ok('update', 'sys/auth/mine', r.root, { type: 'pass', local: true });
    expect(paths(await table(r, 'core/local-auth'))).toEqual(['mine/']);
    expect(paths(await table(r, 'core/auth'))).toEqual(['token/']);
    expect(data(await r.ok('read', 'sys/auth', r.root))['mine/']).toMatchObject({ local: true });
  });

  it('keeps a namespace\'s local mounts under its own prefix', async () => {
    const r = await rig({ engines: [storeEngine()] });
    const ns = data(await r.ok('update', 'sys/namespaces/team', r.root));
    await r.ok('update', 'team/sys/mounts/here', r.root, { type: 'store', local: true });
    expect(paths(await table(r, `core/namespaces/${ns['id'] as string}/local-mounts`))).toEqual(['here/']);
    expect(paths(await table(r, `core/namespaces/${ns['id'] as string}/mounts`))).not.toContain('here/');
    await r.restart();
    await r.ok('update', 'team/here/x', r.root, { v: 1 });
    expect(data(await r.ok('read', 'team/sys/mounts', r.root))['here/']).toMatchObject({ local: true });
  });

  it('serves a local entry stored in the shared table before local tables existed, and moves it with the next change', async () => {
    const r = await rig({ engines: [storeEngine()] });
    await r.ok('update', 'sys/mounts/here', r.root, { type: 'store', local: true });
    await r.ok('update', 'here/x', r.root, { v: 1 });
    const legacy = [...(await table(r, 'core/mounts')), ...(await table(r, 'core/local-mounts'))];
    await r.core.barrier.put('core/mounts', Buffer.from(JSON.stringify(legacy)));
    await r.core.barrier.delete('core/local-mounts');
    await r.restart();
    expect(data(await r.ok('read', 'here/x', r.root))).toEqual({ v: 1 });
    await r.ok('update', 'sys/mounts/other', r.root, { type: 'store' });
    expect(paths(await table(r, 'core/local-mounts'))).toEqual(['here/']);
    expect(paths(await table(r, 'core/mounts'))).not.toContain('here/');
    await r.restart();
    expect(data(await r.ok('read', 'here/x', r.root))).toEqual({ v: 1 });
  });

  it('keeps a moved local mount local', async () => {
    const r = await rig({ engines: [storeEngine()] });
    await r.ok('update', 'sys/mounts/here', r.root, { type: 'store', local: true });
    await r.ok('update', 'sys/remount', r.root, { from: 'here', to: 'there' });
    expect(paths(await table(r, 'core/local-mounts'))).toEqual(['there/']);
    expect(paths(await table(r, 'core/mounts'))).not.toContain('there/');
  });
});
