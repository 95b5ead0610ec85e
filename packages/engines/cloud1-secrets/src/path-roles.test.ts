import { BackendHarness, expectBadRequest, expectFailure, FakeClock, silentLogger } from '@strongroom/core';
import { createCloud1SecretsBackend } from './cloud1-secrets-engine';

const ACCT = '123456789012';
const ROLE_ARN = `arn:aws:iam::${ACCT}:role/deploy`;
const POLICY_ARN = 'arn:aws:iam::aws:policy/ReadOnlyAccess';
const DOC = JSON.stringify({ Version: '2012-10-17', Statement: [{ Effect: 'Allow', Action: 's3:GetObject', Resource: '*' }] });

function harness(): BackendHarness {
  return new BackendHarness(createCloud1SecretsBackend({ clock: new FakeClock(), logger: silentLogger }, { env: {} }));
}

const write = (h: BackendHarness, name: string, data: Record<string, unknown>) => h.request('write', `roles/${name}`, data);

describe('roles', () => {
  it('stores a role, reads it back with every field, updates what a write names, lists and deletes', async () => {
    const h = harness();
    await write(h, 'web', {
      credential_type: 'iam_user', policy_arns: POLICY_ARN, policy_document: `  ${DOC}\n`, iam_groups: 'devs,ops',
      iam_tags: ['team=web', 'env=prod'], user_path: '/app/', permissions_boundary_arn: `arn:aws:iam::${ACCT}:policy/boundary`,
    });
    expect(h.lastOperation).toBe('create');
    expect((await h.request('read', 'roles/web'))?.data).toEqual({
      credential_type: 'iam_user', role_arns: [], policy_arns: [POLICY_ARN], policy_document: DOC, iam_groups: ['devs', 'ops'],
      iam_tags: { team: 'web', env: 'prod' }, default_sts_ttl: 0, max_sts_ttl: 0, user_path: '/app/',
      permissions_boundary_arn: `arn:aws:iam::${ACCT}:policy/boundary`, mfa_serial_number: '',
    });
    await write(h, 'web', { iam_tags: { team: 'api' } });
    expect(h.lastOperation).toBe('update');
    expect((await h.request('read', 'roles/web'))?.data).toMatchObject({ iam_tags: { team: 'api' }, iam_groups: ['devs', 'ops'], user_path: '/app/' });
    await write(h, 'sts', { credential_type: 'assumed_role', role_arns: ROLE_ARN, default_sts_ttl: '15m', max_sts_ttl: 7200 });
    expect((await h.request('read', 'roles/sts'))?.data).toMatchObject({ credential_type: 'assumed_role', default_sts_ttl: 900, max_sts_ttl: 7200 });
    expect((await h.request('list', 'roles'))?.data).toEqual({ keys: ['sts', 'web'] });
    await h.request('delete', 'roles/web');
    expect(await h.request('read', 'roles/web')).toBeNull();
  });

  it('answers 404 to a read or delete of a missing role', async () => {
    const h = harness();
    expect(await h.request('read', 'roles/nope')).toBeNull();
    await expectFailure(h.request('delete', 'roles/nope'), 404);
  });

  it('needs a known credential_type', async () => {
    const h = harness();
    await expectBadRequest(write(h, 'r', { policy_arns: POLICY_ARN }), 'credential_type');
    await expectBadRequest(write(h, 'r', { credential_type: 'iam', policy_arns: POLICY_ARN }), 'credential_type');
  });

  it('requires what each type requires', async () => {
    const h = harness();
    await expectBadRequest(write(h, 'r', { credential_type: 'assumed_role' }), 'role_arns');
    await expectBadRequest(write(h, 'r', { credential_type: 'iam_user' }), 'policy_document');
    await expectBadRequest(write(h, 'r', { credential_type: 'federation_token', iam_groups: 'devs' }), 'policy_document');
    await write(h, 'ok1', { credential_type: 'iam_user', policy_document: DOC });
    await write(h, 'ok2', { credential_type: 'federation_token', policy_arns: POLICY_ARN });
    await write(h, 'ok3', { credential_type: 'session_token' });
    await write(h, 'ok4', { credential_type: 'assumed_role', role_arns: [ROLE_ARN, `arn:aws:iam::${ACCT}:role/path/other`] });
  });

  it('refuses fields a type does not take, naming them', async () => {
    const h = harness();
    const cases: [Record<string, unknown>, string][] = [
      [{ credential_type: 'iam_user', policy_arns: POLICY_ARN, role_arns: ROLE_ARN }, 'role_arns'],
      [{ credential_type: 'federation_token', policy_arns: POLICY_ARN, role_arns: ROLE_ARN }, 'role_arns'],
      [{ credential_type: 'session_token', policy_arns: POLICY_ARN }, 'policy_arns'],
      [{ credential_type: 'session_token', policy_document: DOC }, 'policy_document'],
      [{ credential_type: 'session_token', iam_groups: 'g' }, 'iam_groups'],
      [{ credential_type: 'iam_user', policy_arns: POLICY_ARN, default_sts_ttl: '1h' }, 'default_sts_ttl'],
      [{ credential_type: 'session_token', max_sts_ttl: '1h' }, 'max_sts_ttl'],
      [{ credential_type: 'assumed_role', role_arns: ROLE_ARN, user_path: '/x/' }, 'user_path'],
      [{ credential_type: 'federation_token', policy_arns: POLICY_ARN, permissions_boundary_arn: POLICY_ARN }, 'permissions_boundary_arn'],
      [{ credential_type: 'assumed_role', role_arns: ROLE_ARN, iam_tags: 'a=b' }, 'iam_tags'],
      [{ credential_type: 'iam_user', policy_arns: POLICY_ARN, mfa_serial_number: 'GAHT12345678' }, 'mfa_serial_number'],
    ];
    for (const [data, field] of cases) await expectBadRequest(write(h, 'r', data), field);
    expect(await h.request('read', 'roles/r')).toBeNull();
  });

  it('checks the shape of values', async () => {
    const h = harness();
    await expectBadRequest(write(h, 'r', { credential_type: 'assumed_role', role_arns: 'arn:aws:iam::123:role/x' }), 'role_arns');
    await expectBadRequest(write(h, 'r', { credential_type: 'assumed_role', role_arns: POLICY_ARN }), 'role_arns');
    await expectBadRequest(write(h, 'r', { credential_type: 'iam_user', policy_arns: ROLE_ARN }), 'policy_arns');
    await expectBadRequest(write(h, 'r', { credential_type: 'iam_user', policy_document: '{not json' }), 'policy_document');
    await expectBadRequest(write(h, 'r', { credential_type: 'iam_user', policy_document: '[1]' }), 'policy_document');
    await expectBadRequest(write(h, 'r', { credential_type: 'iam_user', policy_document: DOC, user_path: 'app' }), 'user_path');
    await expectBadRequest(write(h, 'r', { credential_type: 'iam_user', policy_document: DOC, iam_tags: ['novalue'] }), 'iam_tags');
    await expectBadRequest(write(h, 'r', { credential_type: 'iam_user', policy_document: DOC, permissions_boundary_arn: 'boundary' }), 'permissions_boundary_arn');
    await expectBadRequest(write(h, 'r', { credential_type: 'iam_user', policy_document: DOC, iam_groups: 'a/b' }), 'iam_groups');
    await expectBadRequest(write(h, 'r', { credential_type: 'federation_token', policy_document: DOC, default_sts_ttl: '2h', max_sts_ttl: '1h' }), 'default_sts_ttl');
    // A policy document may also be sent as a JSON object.
    await write(h, 'obj', { credential_type: 'iam_user', policy_document: JSON.parse(DOC) });
    expect((await h.request('read', 'roles/obj'))?.data?.['policy_document']).toBe(DOC);
  });

  it('refuses a change of type that leaves fields of the old type', async () => {
    const h = harness();
    await write(h, 'r', { credential_type: 'assumed_role', role_arns: ROLE_ARN });
    await expectBadRequest(write(h, 'r', { credential_type: 'federation_token', policy_document: DOC }), 'role_arns');
    await write(h, 'r', { credential_type: 'federation_token', policy_document: DOC, role_arns: [] });
    expect((await h.request('read', 'roles/r'))?.data).toMatchObject({ credential_type: 'federation_token', role_arns: [] });
  });
});

describe('legacy roles', () => {
  it('take a policy document (iam_user and federation_token) or an ARN (of a policy or a role)', async () => {
    const h = harness();
    await write(h, 'doc', { policy: DOC });
    expect((await h.request('read', 'roles/doc'))?.data).toMatchObject({ credential_type: 'iam_user,federation_token', policy_document: DOC });
    await write(h, 'pol', { arn: POLICY_ARN });
    expect((await h.request('read', 'roles/pol'))?.data).toMatchObject({ credential_type: 'iam_user', policy_arns: [POLICY_ARN] });
    await write(h, 'role', { arn: ROLE_ARN });
    expect((await h.request('read', 'roles/role'))?.data).toMatchObject({ credential_type: 'assumed_role', role_arns: [ROLE_ARN] });
  });

  it('cannot be mixed with the other parameters, nor with each other', async () => {
    const h = harness();
    await expectBadRequest(write(h, 'r', { policy: DOC, credential_type: 'iam_user' }), 'credential_type');
    await expectBadRequest(write(h, 'r', { arn: POLICY_ARN, policy_arns: POLICY_ARN }), 'policy_arns');
    await expectBadRequest(write(h, 'r', { arn: POLICY_ARN, user_path: '/x/' }), 'user_path');
    await expectBadRequest(write(h, 'r', { policy: DOC, arn: POLICY_ARN }), 'arn');
    await expectBadRequest(write(h, 'r', { policy: 'not json' }), 'policy');
    await expectBadRequest(write(h, 'r', { arn: 'arn:aws:s3:::bucket' }), 'arn');
  });

  it('are replaced whole by a write of the current parameters', async () => {
    const h = harness();
    await write(h, 'r', { arn: POLICY_ARN });
    await expectBadRequest(write(h, 'r', { policy_arns: POLICY_ARN }), 'credential_type');
    await write(h, 'r', { credential_type: 'federation_token', policy_arns: POLICY_ARN });
    expect((await h.request('read', 'roles/r'))?.data).toMatchObject({ credential_type: 'federation_token' });
  });
});

describe('stored roles that no longer validate', () => {
  it('read as invalid_data with the reason, and make no credentials', async () => {
    const h = harness();
    await h.storage.put('role/broken', Buffer.from(JSON.stringify({ version: 1, role: { credentialType: 'session_token', policyArns: [POLICY_ARN] } })));
    const resp = await h.request('read', 'roles/broken');
    expect(resp?.data).toEqual({ invalid_data: expect.stringContaining('session_token') });
    expect(resp?.warnings?.[0]).toMatch(/policy_arns/);
    const err = await expectFailure(h.request('read', 'creds/broken'), 400);
    expect(err.message).toMatch(/role "broken" cannot make credentials/);
    await h.storage.put('role/garbage', Buffer.from('\u0000not a role'));
    expect((await h.request('read', 'roles/garbage'))?.data).toEqual({ invalid_data: '\u0000not a role' });
  });

  it('written by an earlier release as bare policy text or ARN are read as legacy roles', async () => {
    const h = harness();
    await h.storage.put('role/old-doc', Buffer.from(DOC));
    await h.storage.put('role/old-arn', Buffer.from(ROLE_ARN));
    expect((await h.request('read', 'roles/old-doc'))?.data).toMatchObject({ credential_type: 'iam_user,federation_token', policy_document: DOC });
    expect((await h.request('read', 'roles/old-arn'))?.data).toMatchObject({ credential_type: 'assumed_role', role_arns: [ROLE_ARN] });
  });
});
