/**
 * A request whose token, ancestors and ACL are in memory is authorized without awaiting the
 * stores. Everything that changes what a token may do must still reach the very next request:
 * revocation, a policy change, use limits, expiry, and an audit device enabled meanwhile.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { rig } from './testing/core-rig';

const READ_MOUNTS = 'path "sys/mounts" { capabilities = ["read"] }';
const NO_GRANT = 'path "sys/nothing" { capabilities = ["read"] }';

describe('requests authorized from memory', () => {
  it('a repeated request from a cached token looks nothing up in the token or policy stores', async () => {
    const r = await rig();
    const token = await r.tokenWithPolicy('mounts', READ_MOUNTS);
    await r.ok('read', 'sys/mounts', token);
    const lookup = jest.spyOn(r.core.tokens, 'lookup');
    const acl = jest.spyOn(r.core.namespaces.root.policies, 'acl');
    await r.ok('read', 'sys/mounts', token);
    await r.ok('read', 'sys/mounts', token);
    expect(lookup).not.toHaveBeenCalled();
    expect(acl).not.toHaveBeenCalled();
  });

  it('a revoked token is refused on its next request', async () => {
    const r = await rig();
    const auth = await r.token(r.root, { policies: ['mounts'] });
    await r.policy('mounts', READ_MOUNTS);
    await r.ok('read', 'sys/mounts', auth.client_token);
    await r.ok('update', 'auth/token/revoke', r.root, { token: auth.client_token });
    expect((await r.call('read', 'sys/mounts', auth.client_token)).status).toBe(403);
  });

  it('a child token is refused on its next request once its parent is revoked', async () => {
    const r = await rig();
    await r.policy('creator', 'path "auth/token/create" { capabilities = ["update"] }\n' + READ_MOUNTS);
    const parent = await r.token(r.root, { policies: ['creator'] });
    const child = await r.token(parent.client_token, { policies: ['creator'] });
    await r.ok('read', 'sys/mounts', child.client_token);
    await r.ok('update', 'auth/token/revoke', r.root, { token: parent.client_token });
    expect((await r.call('read', 'sys/mounts', child.client_token)).status).toBe(403);
  });

  it('a policy change applies to the next request, both ways', async () => {
    const r = await rig();
    const token = await r.tokenWithPolicy('mounts', READ_MOUNTS);
    await r.ok('read', 'sys/mounts', token);
    await r.policy('mounts', NO_GRANT);
    expect((await r.call('read', 'sys/mounts', token)).status).toBe(403);
    await r.policy('mounts', READ_MOUNTS);
    expect((await r.call('read', 'sys/mounts', token)).status).toBe(200);
    await r.ok('delete', 'sys/policies/acl/mounts', r.root);
    expect((await r.call('read', 'sys/mounts', token)).status).toBe(403);
  });

  it('a limited-use token is counted on every request and refused once spent', async () => {
    const r = await rig();
    await r.policy('mounts', READ_MOUNTS);
    const auth = await r.token(r.root, { policies: ['mounts'], num_uses: 3 });
    await r.ok('read', 'sys/mounts', auth.client_token);
    await r.ok('read', 'sys/mounts', auth.client_token);
    await r.ok('read', 'sys/mounts', auth.client_token);
    expect((await r.call('read', 'sys/mounts', auth.client_token)).status).toBe(403);
  });

  it('a token is refused from its expiry on, though it was cached', async () => {
    const r = await rig();
    await r.policy('mounts', READ_MOUNTS);
    const auth = await r.token(r.root, { policies: ['mounts'], ttl: '10s' });
    await r.ok('read', 'sys/mounts', auth.client_token);
    await r.clock.advance(9_999);
    await r.ok('read', 'sys/mounts', auth.client_token);
    await r.clock.advance(1);
    expect((await r.call('read', 'sys/mounts', auth.client_token)).status).toBe(403);
  });

  it('an audit device enabled meanwhile records the next request with its token\'s auth', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'from-memory-'));
    try {
      const r = await rig();
      const token = await r.tokenWithPolicy('mounts', READ_MOUNTS);
      await r.ok('read', 'sys/mounts', token);
      const file = join(dir, 'audit.log');
      await r.ok('update', 'sys/audit/file', r.root, { type: 'file', options: { file_path: file } });
      await r.ok('read', 'sys/mounts', token);
      const entries = (await readFile(file, 'utf8')).trim().split('\n').map((l) => JSON.parse(l));
      const logged = entries.filter((e) => e.request.path === 'sys/mounts' && e.auth?.policies?.includes('mounts'));
      expect(logged.map((e) => e.type)).toEqual(['request', 'response']);
      expect(logged[0].auth.accessor).toMatch(/^hmac-sha256:/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
