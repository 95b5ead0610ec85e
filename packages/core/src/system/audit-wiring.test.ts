import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { rig } from '../testing/core-rig';
import { storeEngine } from '../test-support/store-engine';

/** Core's own behaviour needs only some mount of the kv type, not the KV engine. */
const kvStandIn = storeEngine('kv');

const SECRET = 'sup3r-s3cret-value';

describe('audit devices record every request through the core', () => {
  let dir: string;
  beforeEach(async () => { dir = await mkdtemp(join(tmpdir(), 'wiring-')); });
  afterEach(async () => { await rm(dir, { recursive: true, force: true }); });

  it('logs requests with secrets hashed, survives a restart, and refuses requests when no device can write', async () => {
    const r = await rig({ engines: [kvStandIn] });
    const file = join(dir, 'audit.log');
    await r.ok('update', 'sys/mounts/secret', r.root, { type: 'kv', options: { version: '2' } });
    expect((await r.call('update', 'sys/audit/file', r.root, { type: 'file', options: { file_path: file } })).status).toBe(204);
    await r.ok('update', 'secret/data/app', r.root, { data: { password: SECRET } });
    const read = await r.ok('read', 'secret/data/app', r.root);
    expect(read.body.data.data.password).toBe(SECRET);
    const child = await r.token(r.root, { policies: ['default'] });
    const denied = await r.call('read', 'secret/data/app', child.client_token);
    expect(denied.status).toBe(403);
    const listed = await r.ok('read', 'sys/audit', r.root);
    expect(listed.body['file/']).toEqual({ type: 'file', description: '', options: { file_path: file }, local: false, path: 'file/' });
    const hash = (await r.ok('update', 'sys/audit-hash/file', r.root, { input: SECRET })).body.hash;
    // sudo is needed
    expect((await r.call('read', 'sys/audit', child.client_token)).status).toBe(403);
    // wrapped read
    const wrapped = await r.core.handle({ operation: 'read', path: 'secret/data/app', data: {}, token: r.root, wrapTtl: 60 });
    const wrapToken = (wrapped.body as any).wrap_info.token;
    await r.ok('read', 'sys/health', undefined);

    let text = await readFile(file, 'utf8');
    expect(text).not.toContain(SECRET);
    expect(text).not.toContain(r.root);
    expect(text).not.toContain(child.client_token);
    expect(text).not.toContain(wrapToken);
    expect(text).toContain(hash);
    const entries = text.trim().split('\n').map((l) => JSON.parse(l));
    expect(entries.some((e) => e.error === 'permission denied' && e.type === 'request')).toBe(true);
    expect(entries.some((e) => e.request.path === 'sys/health')).toBe(false);
    const wrapEntry = entries.find((e) => e.type === 'response' && e.request.wrap_ttl === 60);
    expect(wrapEntry.response.wrap_info.token).toMatch(/^hmac-sha256:/);

    await r.restart();
    await r.ok('read', 'secret/data/app', r.root);
    text = await readFile(file, 'utf8');
    expect(text.split(hash).length - 1).toBeGreaterThanOrEqual(5);
    expect((await r.ok('update', 'sys/audit-hash/file', r.root, { input: SECRET })).body.hash).toBe(hash);

    // a device that cannot write (full disk) refuses requests
    await r.ok('update', 'sys/audit/full', r.root, { type: 'file', options: { file_path: '/dev/full' } });
    await r.ok('read', 'secret/data/app', r.root); // one of two fails: still fine
    // The disable itself takes effect, but its response reaches only the broken device.
    expect((await r.call('delete', 'sys/audit/file', r.root)).status).toBe(500);
    expect(r.core.audit.list().map((d) => d.path)).toEqual(['full/']);
    const refused = await r.call('read', 'secret/data/app', r.root);
    expect(refused.status).toBe(500);
    await r.core.close();
  });
});
