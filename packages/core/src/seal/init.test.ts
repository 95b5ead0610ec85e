import { MemoryStorage } from '../storage/memory-storage';
import { callCore, newCore } from '../testing/core-rig';
import { storeEngine } from '../test-support/store-engine';

/** Core's own behaviour needs only some mount of the kv type, not the KV engine. */
const kvStandIn = storeEngine('kv');

describe('initialization', () => {
  it('leaves the server uninitialized when init fails halfway, and a second init succeeds', async () => {
    const storage = new MemoryStorage();
    const core = newCore({ storage, engines: [kvStandIn] });
    const create = jest.spyOn(core.tokens, 'create').mockRejectedValueOnce(new Error('disk full'));
    await expect(core.initialize(1, 1)).rejects.toThrow('disk full');
    create.mockRestore();
    expect(await core.seal.initialized()).toBe(false);
    expect((await callCore(core, 'read', 'sys/seal-status', undefined)).body).toMatchObject({ initialized: false, sealed: true });

    const { keys, rootToken } = await core.initialize(1, 1);
    await core.unseal(keys[0] as Buffer);
    expect((await callCore(core, 'read', 'auth/token/lookup-self', rootToken)).status).toBe(200);
    // Nothing the failed attempt wrote survives: one keyring, one set of tables.
    expect((await callCore(core, 'read', 'sys/mounts', rootToken)).body.data).toHaveProperty(['sys/']);
  });

  it('refuses a second init while one is in progress', async () => {
    const core = newCore();
    const [a, b] = await Promise.allSettled([core.initialize(1, 1), core.initialize(1, 1)]);
    expect(a.status).toBe('fulfilled');
    expect(b).toMatchObject({ status: 'rejected', reason: { status: 400 } });
  });

  it('reports sealed until everything is loaded after the last key share', async () => {
    const core = newCore();
    const { keys, rootToken } = await core.initialize(1, 1);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => { release = resolve; });
    const setup = core.policies.setup.bind(core.policies);
    jest.spyOn(core.policies, 'setup').mockImplementationOnce(async () => { await gate; await setup(); });
    const unsealing = core.unseal(keys[0] as Buffer);
    await new Promise((r) => setImmediate(r));
    expect(core.sealed).toBe(true);
    expect((await callCore(core, 'read', 'auth/token/lookup-self', rootToken)).status).toBe(503);
    expect((await callCore(core, 'read', 'sys/seal-status', undefined)).body.sealed).toBe(true);
    release();
    await unsealing;
    expect(core.sealed).toBe(false);
    expect((await callCore(core, 'read', 'auth/token/lookup-self', rootToken)).status).toBe(200);
  });
});
