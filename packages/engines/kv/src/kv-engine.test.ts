import { Backend, FakeClock, silentLogger } from '@strongroom/core';
import { kvEngine } from './index';
import { kvRig } from './test-support/kv-harness';

describe('kvEngine', () => {
  it('is a secret engine of type kv whose backend is a Backend', () => {
    expect(kvEngine.type).toBe('kv');
    expect(kvEngine.kind).toBe('secret');
    const backend = kvEngine.create({ clock: new FakeClock(), logger: silentLogger });
    expect(backend).toBeInstanceOf(Backend);
    expect(backend.type).toBe('kv');
  });

  it('gives each mount its own locks: backends do not wait on each other', async () => {
    const a = kvRig();
    const b = kvRig();
    await Promise.all([
      a.h.request('write', 'data/k', { data: { v: 'a' }, options: { cas: 0 } }),
      b.h.request('write', 'data/k', { data: { v: 'b' }, options: { cas: 0 } }),
    ]);
    expect((await a.h.request('read', 'data/k'))?.data).toMatchObject({ data: { v: 'a' } });
    expect((await b.h.request('read', 'data/k'))?.data).toMatchObject({ data: { v: 'b' } });
  });
});

describe('paths outside the v2 endpoints', () => {
  it.each([
    ['read', 'app/db', 'get'],
    ['write', 'app/db', 'put'],
    ['list', '', 'list'],
    ['delete', 'app/db', 'delete'],
    ['patch', 'app/db', 'patch'],
  ] as const)('%s %s answers 404 with a warning pointing at vault kv %s', async (op, path, verb) => {
    const { h } = kvRig();
    const resp = await h.request(op, path, { a: 1 });
    expect(resp?.status).toBe(404);
    expect(resp?.data).toBeNull();
    expect(resp?.warnings).toHaveLength(1);
    expect(resp?.warnings?.[0]).toMatch(/^Invalid path for a versioned K\/V secrets engine/);
    expect(resp?.warnings?.[0]).toContain(`vault kv ${verb}`);
  });

  it('is also the answer for the bare endpoint prefixes', async () => {
    const { h } = kvRig();
    expect((await h.request('read', 'data/'))?.status).toBe(404);
    expect((await h.request('write', 'destroy/', { versions: [1] }))?.status).toBe(404);
  });

  it('does not support list on the config path', async () => {
    const { h } = kvRig();
    await expect(h.request('list', 'config')).rejects.toMatchObject({ status: 405 });
  });
});
