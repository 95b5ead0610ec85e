import { call } from '../test-support/servers';
import { useUnsealedServer } from './test-support/unsealed-server';

/**
 * Nothing a client sends or receives that is secret reaches a label or a value of the metrics:
 * not the path of a secret, not its value, not a token, not an accessor.
 */
describe('metrics carry no secrets', () => {
  const t = useUnsealedServer();

  it('after secrets, tokens, logins and refusals, the whole output names none of them', async () => {
    const secretPath = 'zq-distinctive-path-7731';
    const secretValue = 'zq-distinctive-value-4408';
    const bogusToken = 'hvs.zq-distinctive-bogus-token-5512';
    const send = (method: string, path: string, body?: unknown, token = t.root) => call(t.url, method, path, { token, ...(body !== undefined ? { body } : {}) });

    expect((await send('POST', `secret/data/${secretPath}`, { data: { password: secretValue } })).status).toBe(200);
    expect((await send('GET', `secret/data/${secretPath}`)).json.data.data.password).toBe(secretValue);
    expect((await send('GET', `secret/metadata/${secretPath}`)).status).toBe(200);
    expect((await send('GET', `secret/data/${secretPath}-missing`)).status).toBe(404);
    expect((await send('GET', `secret/data/${secretPath}`, undefined, bogusToken)).status).toBe(403);
    expect((await send('GET', `no-such-mount/${secretPath}`)).status).toBe(404);

    const tokens: string[] = [t.root];
    const accessors: string[] = [];
    for (let i = 0; i < 3; i++) {
      const created = await send('POST', 'auth/token/create', { policies: ['default'], meta: { owner: secretPath } });
      tokens.push(created.json.auth.client_token);
      accessors.push(created.json.auth.accessor);
    }
    // A token used, looked up by accessor and revoked; a wrapped reply's token too.
    const [, first, second] = tokens as [string, string, string];
    expect((await send('GET', 'auth/token/lookup-self', undefined, first)).status).toBe(200);
    expect((await send('POST', 'auth/token/lookup-accessor', { accessor: accessors[1] })).status).toBe(200);
    expect((await send('POST', 'auth/token/revoke', { token: second })).status).toBe(204);
    const wrapped = await call(t.url, 'GET', `secret/data/${secretPath}`, { token: t.root, headers: { 'x-vault-wrap-ttl': '5m' } });
    tokens.push(wrapped.json.wrap_info.token);
    accessors.push(wrapped.json.wrap_info.accessor);
    expect(accessors.every((a) => typeof a === 'string' && a.length > 0)).toBe(true);

    const text = await (await fetch(`${t.url}/v1/sys/metrics?format=prometheus`, { headers: { 'x-vault-token': t.root } })).text();
    const json = (await send('GET', 'sys/metrics')).text;
    // The traffic is in there: the output is not trivially free of everything.
    expect(text).toMatch(/vault_core_handle_request_count\{mount_type="kv",operation="read"\} [1-9]/);
    const forbidden = [secretPath, secretValue, bogusToken, ...tokens, ...accessors, 'zq-distinctive'];
    for (const output of [text, json]) {
      for (const word of forbidden) expect(output.includes(word)).toBe(false);
    }
  });
});
