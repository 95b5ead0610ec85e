import { BackendHarness, expectBadRequest, FakeClock, silentLogger } from '@strongroom/core';
import { createCloud1SecretsBackend } from './cloud1-secrets-engine';
import { parseLeaseDuration } from './path-config-lease';

function harness(): BackendHarness {
  return new BackendHarness(createCloud1SecretsBackend({ clock: new FakeClock(), logger: silentLogger }, { env: {} }));
}

describe('config/lease', () => {
  it('is absent until written, then reads back as durations', async () => {
    const h = harness();
    expect(await h.request('read', 'config/lease')).toBeNull();
    await h.request('write', 'config/lease', { lease: '1h30m', lease_max: '24h' });
    expect((await h.request('read', 'config/lease'))?.data).toEqual({ lease: '1h30m0s', lease_max: '24h0m0s' });
  });

  it('needs both fields, with a unit suffix no larger than h, and lease_max not below lease', async () => {
    const h = harness();
    await expectBadRequest(h.request('write', 'config/lease', { lease: '1h' }), 'lease_max');
    await expectBadRequest(h.request('write', 'config/lease', { lease_max: '1h' }), 'lease');
    await expectBadRequest(h.request('write', 'config/lease', { lease: '2d', lease_max: '72h' }), 'lease');
    await expectBadRequest(h.request('write', 'config/lease', { lease: '3600', lease_max: '72h' }), 'lease');
    await expectBadRequest(h.request('write', 'config/lease', { lease: '2h', lease_max: '1h' }), 'lease_max');
  });

  it('parses Go-style durations', () => {
    expect(parseLeaseDuration('lease', '90s')).toBe(90);
    expect(parseLeaseDuration('lease', '1h2m3s')).toBe(3723);
    expect(parseLeaseDuration('lease', '1.5h')).toBe(5400);
    expect(parseLeaseDuration('lease', '0')).toBe(0);
  });
});
