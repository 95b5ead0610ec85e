import { PERIODIC_INTERVAL_MS } from '../core';
import { Backend } from '../framework/backend';
import type { EngineFactory } from '../framework/engine';
import type { BackendRequest } from '../framework/types';
import { rig } from '../testing/core-rig';

function countingEngine() {
  const runs: string[] = [];
  class Counting extends Backend {
    override async periodic(req: BackendRequest): Promise<void> {
      runs.push(req.mount.path);
      if (req.mount.path === 'broken/') throw new Error('boom');
    }
  }
  const engine: EngineFactory = { type: 'counting', kind: 'secret', create: () => new Counting('counting', []) };
  return { engine, runs };
}

describe('background work of mounts', () => {
  it('runs each mount\'s periodic work once a minute while unsealed, past a failing mount', async () => {
    const { engine, runs } = countingEngine();
    const r = await rig({ engines: [engine] });
    for (const path of ['a', 'broken', 'b']) await r.ok('update', `sys/mounts/${path}`, r.root, { type: 'counting' });
    await r.clock.advance(PERIODIC_INTERVAL_MS - 1);
    expect(runs).toEqual([]);
    await r.clock.advance(1);
    expect(runs.sort()).toEqual(['a/', 'b/', 'broken/']);
    await r.clock.advance(PERIODIC_INTERVAL_MS);
    expect(runs).toHaveLength(6);
    await r.ok('update', 'sys/seal', r.root);
    await r.clock.advance(5 * PERIODIC_INTERVAL_MS);
    expect(runs).toHaveLength(6);
  });

  it('on a performance secondary runs only local mounts\' work, leaving replicated ones to the primary', async () => {
    const { engine, runs } = countingEngine();
    const r = await rig({ engines: [engine] });
    await r.ok('update', 'sys/mounts/shared', r.root, { type: 'counting' });
    await r.ok('update', 'sys/mounts/mine', r.root, { type: 'counting', local: true });
    r.core.replication = { drMode: () => 'disabled', performanceMode: () => 'secondary', servesOnDrSecondary: () => false };
    await r.clock.advance(PERIODIC_INTERVAL_MS);
    expect(runs).toEqual(['mine/']);
  });
});
