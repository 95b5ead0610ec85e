import type { EngineFactory } from '../framework/engine';
import { rig } from '../testing/core-rig';
import { storeEngine } from '../test-support/store-engine';

/** A stand-in engine that counts the backends core makes of it, to see a reload make a new one. */
function countedEngine(): { engine: EngineFactory; made: () => number } {
  const inner = storeEngine('store');
  let made = 0;
  const engine: EngineFactory = {
    ...inner,
    create: (ctx) => {
      made++;
      return inner.create(ctx);
    },
  };
  return { engine, made: () => made };
}

describe('sys/plugins/reload/backend', () => {
  async function setup() {
    const { engine, made } = countedEngine();
    const r = await rig({ engines: [engine] });
    for (const path of ['one', 'two']) await r.ok('update', `sys/mounts/${path}`, r.root, { type: 'store' });
    await r.ok('update', 'one/k', r.root, { name: 'k' });
    return { r, made };
  }

  it('starts a fresh backend for the mounts named', async () => {
    const { r, made } = await setup();
    const before = made();
    expect((await r.call('update', 'sys/plugins/reload/backend', r.root, { mounts: ['one/'] })).status).toBe(204);
    expect(made()).toBe(before + 1);
    expect((await r.ok('read', 'one/k', r.root)).body.data.name).toBe('k');
  });

  it('reloads every mount of a plugin type, keeps data, and refuses bad requests', async () => {
    const { r, made } = await setup();
    const before = made();
    await r.ok('update', 'sys/plugins/reload/backend', r.root, { plugin: 'store' });
    expect(made()).toBe(before + 2);
    expect((await r.ok('read', 'one/k', r.root)).body.data.name).toBe('k');
    expect((await r.call('update', 'sys/plugins/reload/backend', r.root, {})).status).toBe(400);
    expect((await r.call('update', 'sys/plugins/reload/backend', r.root, { plugin: 'store', mounts: ['one/'] })).status).toBe(400);
    expect((await r.call('update', 'sys/plugins/reload/backend', r.root, { mounts: ['nope/'] })).body.errors[0]).toMatch(/"mounts"/);
    const global = await r.ok('update', 'sys/plugins/reload/backend', r.root, { plugin: 'store', scope: 'global' });
    expect(global.body.data.reload_id).toEqual(expect.any(String));
  });
});
