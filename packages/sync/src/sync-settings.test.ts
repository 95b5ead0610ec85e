import { syncSettingsFromEnv } from './destination-types';

describe('operator settings for sync', () => {
  it('reads extra key vault origins from the environment, as origins', () => {
    expect(syncSettingsFromEnv({})).toEqual({ cloud2KeyVaultOrigins: [], deployhostApiUrl: 'https://api.vercel.com' });
    expect(syncSettingsFromEnv({ STRONGROOM_CLOUD2_KV_ORIGINS: ' https://127.0.0.1:8443/ , https://KV.internal ' })).toEqual({
      cloud2KeyVaultOrigins: ['https://127.0.0.1:8443', 'https://kv.internal'], deployhostApiUrl: 'https://api.vercel.com',
    });
  });

  it('reads the destinations\' endpoints: the cloud1 SDK\'s own variables and ours', () => {
    expect(syncSettingsFromEnv({ AWS_ENDPOINT_URL: 'http://127.0.0.1:4566', AWS_REGION: 'eu-west-1', STRONGROOM_DEPLOYHOST_API_URL: 'http://127.0.0.1:9000/' })).toEqual({
      cloud2KeyVaultOrigins: [], cloud1SmEndpoint: 'http://127.0.0.1:4566', cloud1Region: 'eu-west-1', deployhostApiUrl: 'http://127.0.0.1:9000',
    });
    // The service's own variable wins over the general one, as in the SDK.
    expect(syncSettingsFromEnv({ AWS_ENDPOINT_URL: 'http://127.0.0.1:1', AWS_ENDPOINT_URL_SECRETS_MANAGER: 'http://127.0.0.1:2' }).cloud1SmEndpoint).toBe('http://127.0.0.1:2');
    expect(() => syncSettingsFromEnv({ STRONGROOM_DEPLOYHOST_API_URL: 'ftp://x' })).toThrow(/^STRONGROOM_DEPLOYHOST_API_URL: must be an http\(s\) URL/);
  });

  it.each(['not a url', 'ftp://kv.internal', 'https://kv.internal/path', 'https://u:p@kv.internal'])('refuses %j at start, saying which setting', (value) => {
    expect(() => syncSettingsFromEnv({ STRONGROOM_CLOUD2_KV_ORIGINS: value })).toThrow(/^STRONGROOM_CLOUD2_KV_ORIGINS: each entry must be an origin/);
  });
});
