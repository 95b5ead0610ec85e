import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, parseConfig } from './index';

let dir: string;
let ca: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'strongroom-seal-config-'));
  ca = join(dir, 'ca.pem');
  writeFileSync(ca, 'not checked here');
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const base = 'storage "raft" {\n path = "/d"\n}\nlistener "tcp" {\n tls_disable = true\n}\n';
const transit = (body: string) => `${base}seal "transit" {\n${body}\n}\n`;
const full = ' address = "https://unsealer:8200"\n token = "s.secret-token"\n key_name = "autounseal"\n mount_path = "transit/"';

async function failure(text: string, env: NodeJS.ProcessEnv = {}): Promise<ConfigError> {
  try {
    await parseConfig(text, 'c.hcl', undefined, env);
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error('the config was accepted');
}

test('Vault\'s stanza gives the seal, with the mount path trimmed and the TLS settings kept', async () => {
  const config = await parseConfig(transit(`${full}\n namespace = "ns1/"\n disable_renewal = "true"\n tls_ca_cert = "${ca}"\n tls_server_name = "unsealer"\n tls_skip_verify = "false"`), 'c.hcl', undefined, {});
  expect(config.seals).toEqual([{
    type: 'transit', disabled: false, address: 'https://unsealer:8200', token: 's.secret-token', keyName: 'autounseal', mountPath: 'transit',
    namespace: 'ns1/', disableRenewal: true, tlsCaCert: ca, tlsServerName: 'unsealer', tlsSkipVerify: false,
  }]);
  expect(config.warnings).toEqual([]);
});

test('without a seal block there is no auto seal', async () => {
  expect((await parseConfig(base, 'c.hcl', undefined, {})).seals).toBeUndefined();
});

test('VAULT_TRANSIT_SEAL_* win over the file; VAULT_ADDR and VAULT_TOKEN only fill in what it leaves out', async () => {
  const env = {
    VAULT_TRANSIT_SEAL_KEY_NAME: 'from-env', VAULT_TRANSIT_SEAL_MOUNT_PATH: '/other/', VAULT_TRANSIT_SEAL_DISABLE_RENEWAL: 'true',
    VAULT_ADDR: 'http://shell-default:8200', VAULT_TOKEN: 'env-token', VAULT_CACERT: ca, VAULT_NAMESPACE: 'team',
  };
  const fromFile = await parseConfig(transit(full), 'c.hcl', undefined, env);
  expect(fromFile.seals?.[0]).toMatchObject({ address: 'https://unsealer:8200', token: 's.secret-token', keyName: 'from-env', mountPath: 'other', disableRenewal: true, tlsCaCert: ca, namespace: 'team' });
  const fromEnv = await parseConfig(transit(' key_name = "k"\n mount_path = "transit"'), 'c.hcl', undefined, { VAULT_ADDR: 'http://a:8200', VAULT_TOKEN: 't' });
  expect(fromEnv.seals?.[0]).toMatchObject({ address: 'http://a:8200', token: 't', keyName: 'k' });
});

test('VAULT_SEAL_TYPE=transit stands for a stanza taken from the environment', async () => {
  const config = await parseConfig(base, 'c.hcl', undefined, {
    VAULT_SEAL_TYPE: 'transit', VAULT_ADDR: 'http://a:8200', VAULT_TOKEN: 't', VAULT_TRANSIT_SEAL_KEY_NAME: 'k', VAULT_TRANSIT_SEAL_MOUNT_PATH: 'transit/',
  });
  expect(config.seals).toEqual([{ type: 'transit', disabled: false, address: 'http://a:8200', token: 't', keyName: 'k', mountPath: 'transit', tlsSkipVerify: false, disableRenewal: false }]);
  expect((await failure(base, { VAULT_SEAL_TYPE: 'transit' })).field).toBe('seal.transit[0].address');
  expect((await failure(base, { VAULT_SEAL_TYPE: 'awskms' })).field).toBe('VAULT_SEAL_TYPE');
});

test('a migration\'s pair (one in use, one disabled) is accepted; a Shamir stanza is Shamir', async () => {
  const config = await parseConfig(`${transit(`${full}\n disabled = "true"`)}seal "shamir" {\n}\n`, 'c.hcl', undefined, {});
  expect(config.seals).toHaveLength(1);
  expect(config.seals?.[0]?.disabled).toBe(true);
});

test.each<[string, string, string, string]>([
  ['a missing address', transit(' token = "t"\n key_name = "k"\n mount_path = "transit/"'), 'seal.transit[0].address', 'is required'],
  ['a missing token', transit(' address = "http://a:8200"\n key_name = "k"\n mount_path = "transit/"'), 'seal.transit[0].token', 'is required'],
  ['a missing key name', transit(' address = "http://a:8200"\n token = "t"\n mount_path = "transit/"'), 'seal.transit[0].key_name', 'is required'],
  ['a missing mount path', transit(' address = "http://a:8200"\n token = "t"\n key_name = "k"'), 'seal.transit[0].mount_path', 'is required'],
  ['an address that is not a URL', transit(full.replace('https://unsealer:8200', 'unsealer:8200')), 'seal.transit[0].address', 'must be an http:// or https:// URL'],
  ['a bad boolean', transit(`${full}\n tls_skip_verify = "maybe"`), 'seal.transit[0].tls_skip_verify', 'must be a boolean'],
  ['a CA file that does not exist', transit(`${full}\n tls_ca_cert = "/nonexistent/ca.pem"`), 'seal.transit[0].tls_ca_cert', 'does not exist'],
  ['an unknown setting', transit(`${full}\n key = "x"`), 'seal.transit[0].key', 'unknown setting'],
  ['another seal type', `${base}seal "awskms" {\n region = "us-east-1"\n}\n`, 'seal "awskms"', 'only "transit"'],
  ['two seals in use', `${transit(full)}seal "transit" {\n${full}\n}\n`, 'seal', 'only one seal may be in use'],
])('%s is refused naming the field', async (_name, text, field, rule) => {
  const err = await failure(text);
  expect(err.field).toBe(field);
  expect(err.rule).toContain(rule);
  expect(err.message).not.toContain('s.secret-token');
});

test('half a client certificate names the missing half', async () => {
  const err = await failure(transit(`${full}\n tls_client_cert = "${ca}"`));
  expect([err.field, err.rule]).toEqual(['seal.transit[0].tls_client_key', 'is required with the other half of the client certificate']);
});
