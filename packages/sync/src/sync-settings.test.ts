import { syncSettingsFromEnv } from './destination-types';

describe('operator settings for sync', () => {
  it('reads extra key vault origins from the environment, as origins', () => {
    expect(syncSettingsFromEnv({})).toEqual({ cloud2KeyVaultOrigins: [], deployhostApiUrl: 'https://api.vercel.com', repohostApiUrl: 'https://api.github.com' });
    expect(syncSettingsFromEnv({ STRONGROOM_CLOUD2_KV_ORIGINS: ' https://127.0.0.1:8443/ , https://KV.internal ' })).toEqual({
      cloud2KeyVaultOrigins: ['https://127.0.0.1:8443', 'https://kv.internal'], deployhostApiUrl: 'https://api.vercel.com', repohostApiUrl: 'https://api.github.com',
    });
  });

  it('reads the destinations\' endpoints: the cloud1 SDK\'s own variables and ours', () => {
    expect(syncSettingsFromEnv({ AWS_ENDPOINT_URL: 'http://127.0.0.1:4566', AWS_REGION: 'eu-west-1', STRONGROOM_DEPLOYHOST_API_URL: 'http://127.0.0.1:9000/' })).toEqual({
      cloud2KeyVaultOrigins: [], cloud1SmEndpoint: 'http://127.0.0.1:4566', cloud1Region: 'eu-west-1', deployhostApiUrl: 'http://127.0.0.1:9000', repohostApiUrl: 'https://api.github.com',
    });
    // The service's own variable wins over the general one, as in the SDK.
    expect(syncSettingsFromEnv({ AWS_ENDPOINT_URL: 'http://127.0.0.1:1', AWS_ENDPOINT_URL_SECRETS_MANAGER: 'http://127.0.0.1:2' }).cloud1SmEndpoint).toBe('http://127.0.0.1:2');
    expect(() => syncSettingsFromEnv({ STRONGROOM_DEPLOYHOST_API_URL: 'ftp://x' })).toThrow(/^STRONGROOM_DEPLOYHOST_API_URL: must be an http\(s\) URL/);
  });

  it('reads the other clients\' endpoints and the extra certificate authorities', () => {
    const pem = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
    const read = (path: string) => {
      if (path !== '/etc/ca.pem') throw new Error('ENOENT');
      return pem;
    };
    expect(syncSettingsFromEnv({
      AZURE_AUTHORITY_HOST: 'https://127.0.0.1:8443/', STRONGROOM_CLOUD3_SM_ENDPOINT: '127.0.0.1:9090',
      STRONGROOM_REPOHOST_API_URL: 'http://127.0.0.1:7000', STRONGROOM_SYNC_CA_FILE: '/etc/ca.pem',
    }, read)).toMatchObject({
      cloud2AuthorityHost: 'https://127.0.0.1:8443', cloud3SmEndpoint: { host: '127.0.0.1', port: 9090 }, repohostApiUrl: 'http://127.0.0.1:7000', extraCaCertificates: pem,
    });
    expect(syncSettingsFromEnv({ STRONGROOM_CLOUD3_SM_ENDPOINT: '[::1]:443' }).cloud3SmEndpoint).toEqual({ host: '::1', port: 443 });
    for (const bad of ['127.0.0.1', 'http://127.0.0.1:9090', 'h:0', 'h:70000']) {
      expect(() => syncSettingsFromEnv({ STRONGROOM_CLOUD3_SM_ENDPOINT: bad })).toThrow(/^STRONGROOM_CLOUD3_SM_ENDPOINT: must be host:port/);
    }
    expect(() => syncSettingsFromEnv({ STRONGROOM_SYNC_CA_FILE: '/nowhere' }, read)).toThrow(/^STRONGROOM_SYNC_CA_FILE: cannot read/);
    expect(() => syncSettingsFromEnv({ STRONGROOM_SYNC_CA_FILE: '/etc/ca.pem' }, () => 'not a pem')).toThrow(/holds no PEM certificate/);
  });

  it.each(['not a url', 'ftp://kv.internal', 'https://kv.internal/path', 'https://u:p@kv.internal'])('refuses %j at start, saying which setting', (value) => {
    expect(() => syncSettingsFromEnv({ STRONGROOM_CLOUD2_KV_ORIGINS: value })).toThrow(/^STRONGROOM_CLOUD2_KV_ORIGINS: each entry must be an origin/);
  });

  it('reads how often the reconciliation runs, as a duration; 0 turns it off', () => {
    expect(syncSettingsFromEnv({}).reconcileIntervalMs).toBeUndefined();
    expect(syncSettingsFromEnv({ STRONGROOM_SYNC_RECONCILE_INTERVAL: '2m' }).reconcileIntervalMs).toBe(120_000);
    expect(syncSettingsFromEnv({ STRONGROOM_SYNC_RECONCILE_INTERVAL: '30' }).reconcileIntervalMs).toBe(30_000);
    expect(syncSettingsFromEnv({ STRONGROOM_SYNC_RECONCILE_INTERVAL: '0' }).reconcileIntervalMs).toBe(0);
    expect(() => syncSettingsFromEnv({ STRONGROOM_SYNC_RECONCILE_INTERVAL: 'often' })).toThrow(/^STRONGROOM_SYNC_RECONCILE_INTERVAL: must be a duration/);
  });
});
