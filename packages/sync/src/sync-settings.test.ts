import { syncSettingsFromEnv } from './destination-types';

describe('operator settings for sync', () => {
  it('reads extra key vault origins from the environment, as origins', () => {
    expect(syncSettingsFromEnv({})).toEqual({ cloud2KeyVaultOrigins: [] });
    expect(syncSettingsFromEnv({ STRONGROOM_CLOUD2_KV_ORIGINS: ' https://127.0.0.1:8443/ , https://KV.internal ' })).toEqual({
      cloud2KeyVaultOrigins: ['https://127.0.0.1:8443', 'https://kv.internal'],
    });
  });

  it.each(['not a url', 'ftp://kv.internal', 'https://kv.internal/path', 'https://u:p@kv.internal'])('refuses %j at start, saying which setting', (value) => {
    expect(() => syncSettingsFromEnv({ STRONGROOM_CLOUD2_KV_ORIGINS: value })).toThrow(/^STRONGROOM_CLOUD2_KV_ORIGINS: each entry must be an origin/);
  });
});
