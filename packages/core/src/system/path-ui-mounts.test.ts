import { rig } from '../testing/core-rig';
import { storeEngine } from '../test-support/store-engine';

/** Core's own behaviour needs only some mount of the kv type, not the KV engine. */
const kvStandIn = storeEngine('kv');

describe('sys/internal/ui/mounts, the preflight of `vault kv` and the UI', () => {
  async function setup() {
    const r = await rig({ engines: [kvStandIn] });
    await r.ok('update', 'sys/mounts/secret', r.root, { type: 'kv-v2' });
    await r.ok('update', 'sys/mounts/other', r.root, { type: 'kv' });
    await r.policy('app', 'path "secret/data/app/*" { capabilities = ["read"] }');
    const app = (await r.token(r.root, { policies: ['app'] })).client_token as string;
    return { r, app };
  }

  it('tells a token the mount and KV version of a path under a mount it has a grant in', async () => {
    const { r, app } = await setup();
    const reply = await r.ok('read', 'sys/internal/ui/mounts/secret/app/db', app);
    expect(reply.body.data).toMatchObject({ path: 'secret/', type: 'kv', options: { version: '2' } });
  });

  it('refuses mounts the token has no grant under, unknown mounts, and anonymous callers alike', async () => {
    const { r, app } = await setup();
    expect((await r.call('read', 'sys/internal/ui/mounts/other/x', app)).status).toBe(403);
    expect((await r.call('read', 'sys/internal/ui/mounts/nowhere/x', app)).status).toBe(403);
    expect((await r.call('read', 'sys/internal/ui/mounts/secret/app/db', undefined)).status).toBe(403);
    expect((await r.call('read', 'sys/internal/ui/mounts/secret/app/db', 'not-a-token')).status).toBe(403);
  });

  it('lists only the mounts a token can use, and to anonymous callers only those tuned unauth', async () => {
    const { r, app } = await setup();
    const listed = await r.ok('read', 'sys/internal/ui/mounts', app);
    // `sys/` shows too: the default policy grants paths there (capabilities-self and friends).
    expect(Object.keys(listed.body.data.secret)).toEqual(['secret/', 'sys/']);
    const rootView = await r.ok('read', 'sys/internal/ui/mounts', r.root);
    expect(Object.keys(rootView.body.data.secret)).toEqual(['identity/', 'other/', 'secret/', 'sys/']);
    expect((await r.ok('read', 'sys/internal/ui/mounts', undefined)).body.data.secret).toEqual({});
    await r.ok('update', 'sys/mounts/other/tune', r.root, { listing_visibility: 'unauth' });
    expect(Object.keys((await r.ok('read', 'sys/internal/ui/mounts', undefined)).body.data.secret)).toEqual(['other/']);
  });

  it('counts + and * rules that reach under the mount', async () => {
    const { r } = await setup();
    await r.policy('plus', 'path "+/data/shared" { capabilities = ["read"] }');
    await r.policy('glob', 'path "oth*" { capabilities = ["list"] }');
    await r.policy('denied', 'path "secret/*" { capabilities = ["deny"] }');
    const plus = (await r.token(r.root, { policies: ['plus'] })).client_token;
    const glob = (await r.token(r.root, { policies: ['glob'] })).client_token;
    const denied = (await r.token(r.root, { policies: ['denied'] })).client_token;
    expect((await r.call('read', 'sys/internal/ui/mounts/secret/x', plus)).status).toBe(200);
    expect((await r.call('read', 'sys/internal/ui/mounts/other/x', glob)).status).toBe(200);
    expect((await r.call('read', 'sys/internal/ui/mounts/secret/x', glob)).status).toBe(403);
    expect((await r.call('read', 'sys/internal/ui/mounts/secret/x', denied)).status).toBe(403);
  });
});

describe('system paths and trailing slashes', () => {
  it('enables a mount written with a trailing slash, as the vault CLI sends it', async () => {
    const r = await rig({ engines: [kvStandIn] });
    await r.ok('update', 'sys/mounts/team/', r.root, { type: 'kv-v2' });
    expect((await r.ok('read', 'sys/mounts', r.root)).body.data['team/']).toMatchObject({ type: 'kv' });
    expect((await r.call('update', 'team/data/x/', r.root, { data: {} })).status).toBe(400);
  });
});
