import { randomUUID } from 'node:crypto';
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { BadRequestError } from '../errors';
import { MemoryStorage } from '../storage/memory-storage';
import { Backend } from './backend';
import { BackendHarness } from './testing';
import { definePath, type BackendRequest } from './types';

function upsertBackend() {
  const storage = new MemoryStorage();
  const backend = new Backend('demo', [
    definePath({
      pattern: 'keys/(?<name>[^/]+)',
      fields: {
        name: { type: 'string' },
        size: { type: 'int', default: 256, allowed: [128, 256] },
        tags: { type: 'comma-list' },
        ttl: { type: 'duration' },
        label: { type: 'string', required: true },
      },
      existenceCheck: async (req, f) => (await req.storage.get(`keys/${f.string('name')}`)) !== null,
      operations: {
        create: async (req, f) => {
          await req.storage.put(`keys/${f.string('name')}`, Buffer.from(JSON.stringify({ size: f.int('size'), ttl: f.int('ttl'), tags: f.list('tags') })));
          return { data: { created: true, size: f.int('size'), size_given: f.has('size') } };
        },
        update: async () => ({ data: { created: false } }),
        read: async (req, f) => {
          const raw = await req.storage.get(`keys/${f.string('name')}`);
          return raw ? { data: JSON.parse(raw.toString()) } : null;
        },
      },
    }),
    definePath({ pattern: 'plain', operations: { update: async () => null } }),
  ]);
  return new BackendHarness(backend, {}, storage);
}

describe('the backend framework', () => {
  it('turns a write into create when the existence check says absent, and update otherwise', async () => {
    const h = upsertBackend();
    expect((await h.request('write', 'keys/a', { label: 'x' }))?.data).toEqual({ created: true, size: 256, size_given: false });
    expect(h.lastOperation).toBe('create');
    expect((await h.request('write', 'keys/a', { label: 'x' }))?.data).toEqual({ created: false });
    expect(h.lastOperation).toBe('update');
  });

  it('treats every write as an update on a path without an existence check', async () => {
    const h = upsertBackend();
    await h.request('write', 'plain');
    expect(h.lastOperation).toBe('update');
  });

  it('resolves a write at once when the existence check answers without a Promise', async () => {
    const known = new Set(['cached']);
    const backend = new Backend('demo', [definePath({
      pattern: 'keys/(?<name>[^/]+)',
      fields: { name: { type: 'string' } },
      existenceCheck: (_req, f) => known.has(f.string('name')) || Promise.resolve(false),
      operations: { update: async () => null, create: async () => null },
    })]);
    const h = new BackendHarness(backend);
    const request = (path: string): BackendRequest => ({
      id: randomUUID(), operation: 'update', path, mount: h.mount, storage: h.storage, data: {}, headers: {}, namespace: { id: 'root', path: '' },
    });
    const resolve = (req: BackendRequest) => {
      const match = backend.match(req.path);
      if (!match) throw new Error(`no match for ${req.path}`);
      return backend.resolveWrite(match, req);
    };
    expect(resolve(request('keys/cached'))).toBe('update');
    const resolving = resolve(request('keys/other'));
    expect(resolving).toBeInstanceOf(Promise);
    expect(await resolving).toBe('create');
  });

  it('converts fields leniently, like Vault, and fills defaults', async () => {
    const h = upsertBackend();
    await h.request('write', 'keys/b', { label: 'x', size: '128', tags: 'a, b,,c', ttl: '1h30m' });
    expect((await h.request('read', 'keys/b'))?.data).toEqual({ size: 128, ttl: 5400, tags: ['a', 'b', 'c'] });
  });

  it.each([
    [{ label: 'x', size: 'big' }, '"size": expected an integer'],
    [{ label: 'x', size: 512 }, '"size": must be one of 128, 256'],
    [{ label: 'x', ttl: '5 parsecs' }, '"ttl": expected a duration'],
    [{ label: 'x', tags: { a: 1 } }, '"tags": expected a list of strings'],
    [{ label: { nested: true } }, '"label": expected a string'],
    [{}, 'missing required field "label"'],
  ])('refuses %j with a 400 naming the field', async (data, message) => {
    const h = upsertBackend();
    const attempt = h.request('write', 'keys/c', data);
    await expect(attempt).rejects.toBeInstanceOf(BadRequestError);
    await expect(attempt).rejects.toThrow(message);
  });

  it('warns about fields it does not know instead of failing', async () => {
    const h = upsertBackend();
    const resp = await h.request('write', 'keys/d', { label: 'x', colour: 'red', shape: 'round' });
    expect(resp?.warnings).toEqual(['Endpoint ignored these unrecognized parameters: [colour shape]']);
  });

  it('takes body fields named like Object.prototype members as unknown fields, not as schemas', async () => {
    const h = upsertBackend();
    const data = JSON.parse('{"label":"x","constructor":"c","toString":1,"__proto__":{"size":128},"hasOwnProperty":true}');
    const resp = await h.request('write', 'keys/e', data);
    expect(resp?.warnings).toEqual(['Endpoint ignored these unrecognized parameters: [constructor toString __proto__ hasOwnProperty]']);
    expect((await h.request('read', 'keys/e'))?.data).toMatchObject({ size: 256 });
  });

  it('gives each request its own copy of an object default', async () => {
    const backend = new Backend('demo', [
      definePath({
        pattern: 'grow',
        fields: { list: { type: 'any', default: ['a'] } },
        operations: {
          update: async (_req, f) => {
            const list = f.get('list') as string[];
            list.push('b');
            return { data: { list } };
          },
        },
      }),
    ]);
    const h = new BackendHarness(backend, {}, new MemoryStorage());
    expect((await h.request('write', 'grow'))?.data).toEqual({ list: ['a', 'b'] });
    expect((await h.request('write', 'grow'))?.data).toEqual({ list: ['a', 'b'] });
  });

  it('lets path captures win over body fields of the same name', async () => {
    const h = upsertBackend();
    await h.request('write', 'keys/real', { label: 'x', name: 'spoofed' });
    expect(await h.request('read', 'keys/real')).not.toBeNull();
    expect(await h.request('read', 'keys/spoofed')).toBeNull();
  });
});

describe('path matching', () => {
  it('finds paths by pattern whatever their literal start, optional characters and alternations', () => {
    const backend = new Backend('m', [
      definePath({ pattern: 'keys/?', operations: { list: async () => null } }),
      definePath({ pattern: 'keys/(?<name>[^/]+)', operations: { read: async () => null } }),
      definePath({ pattern: '(?:leases/renew|renew)(?:/(?<id>.+))?', operations: { update: async () => null } }),
      definePath({ pattern: 'a|b', operations: { read: async () => null } }),
    ]);
    expect(backend.match('keys')?.path.def.pattern).toBe('keys/?');
    expect(backend.match('keys/')?.path.def.pattern).toBe('keys/?');
    expect(backend.match('keys/k1')?.captures).toEqual({ name: 'k1' });
    expect(backend.match('renew/x/y')?.captures).toEqual({ id: 'x/y' });
    expect(backend.match('leases/renew')).not.toBeNull();
    expect(backend.match('b')).not.toBeNull();
    expect(backend.match('nothing')).toBeNull();
  });

  it('keeps no served request alive through a young-generation GC', async () => {
    // A request kept alive past its answer is copied into the old generation, at a GC cost per request.
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as (options: { type: 'minor' }) => void;
    const h = upsertBackend();
    const youngSurvivors = (): number => {
      const spaces = getHeapSpaceStatistics();
      return spaces.filter((s) => s.space_name === 'new_space').reduce((n, s) => n + s.space_used_size, 0);
    };
    gc({ type: 'minor' });
    gc({ type: 'minor' });
    const before = youngSurvivors();
    for (let i = 0; i < 20; i++) {
      const match = h.backend.match(`keys/k${i}`);
      if (!match) throw new Error('no match');
      // About 50 KB of small objects each, which a kept request would carry along.
      const data: Record<string, unknown> = { label: 'x', bulk: Array.from({ length: 1000 }, (_, n) => ({ n })) };
      const req: BackendRequest = {
        id: randomUUID(), operation: 'update', path: `keys/k${i}`, mount: h.mount, storage: h.storage,
        data, headers: {}, namespace: { id: 'root', path: '' },
      };
      req.operation = await h.backend.resolveWrite(match, req);
      await h.backend.execute(match, req);
    }
    await new Promise((resolve) => setImmediate(resolve));
    gc({ type: 'minor' });
    // 20 kept requests would leave about a megabyte in the young generation's survivor space.
    expect(youngSurvivors() - before).toBeLessThan(300_000);
  });
});
