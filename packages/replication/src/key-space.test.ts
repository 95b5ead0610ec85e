import { classifyKey } from './key-space';

describe('classifyKey', () => {
  it('keeps this cluster\'s own state out of replication', () => {
    expect(classifyKey('core/local/replication/dr')).toBeNull();
    expect(classifyKey('core/autopilot-configuration')).toBeNull();
    // Each cluster's own auto seal wraps the root key: the primary's seal's copy opens nothing on a secondary.
    expect(classifyKey('core/wrapped-root-key')).toBeNull();
  });

  it('puts tokens and leases in the local tree and the rest in the replicated one', () => {
    expect(classifyKey('sys/token/id/abc')).toBe('local');
    expect(classifyKey('sys/expire/id/auth/token/create/x')).toBe('local');
    expect(classifyKey('core/keyring')).toBe('replicated');
    expect(classifyKey('logical/1234/data/x')).toBe('replicated');
    expect(classifyKey('core/localish')).toBe('replicated');
  });
});
