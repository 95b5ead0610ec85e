/** One valid destination of each type, with credentials distinctive enough to search replies for. */
export const PRIVATE_KEY_BODY = 'MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjSYNCFAKEKEYMATERIAL';

export const CLOUD3_CREDENTIALS = JSON.stringify({
  type: 'service_account',
  project_id: 'demo-project',
  client_email: 'sync@demo-project.iam.gserviceaccount.com',
  private_key: `-----BEGIN PRIVATE KEY-----\n${PRIVATE_KEY_BODY}\n-----END PRIVATE KEY-----\n`,
});

export const VALID: Record<string, Record<string, unknown>> = {
  'cloud1-sm': { access_key_id: 'AKIASYNCEXAMPLE00001', secret_access_key: 'wJalrXUtnFEMI/K7MDENG/bPxRfiSYNCSECRET01', region: 'us-east-1' },
  'cloud2-kv': {
    key_vault_uri: 'https://my-vault.vault.azure.net/', client_id: '11111111-2222-3333-4444-555555555555',
    client_secret: 'Cl1ent~SYNCSECRET.value_02', tenant_id: 'contoso.onmicrosoft.com',
  },
  'cloud3-sm': { credentials: CLOUD3_CREDENTIALS },
  repohost: { access_token: 'ghp_SYNCTOKEN03abcdefghijklmnopqrstuvwx', repository_owner: 'acme', repository_name: 'web-app' },
  'deployhost-project': {
    access_token: 'dh_SYNCTOKEN04_0123456789', project_id: 'prj_123', team_id: 'team_a', deployment_environments: ['production', 'preview'],
  },
};

/** Every credential above, and the pieces of one that could turn up on their own. */
export const CREDENTIALS: string[] = [
  'AKIASYNCEXAMPLE00001', 'wJalrXUtnFEMI/K7MDENG/bPxRfiSYNCSECRET01', 'Cl1ent~SYNCSECRET.value_02', PRIVATE_KEY_BODY,
  'ghp_SYNCTOKEN03abcdefghijklmnopqrstuvwx', 'dh_SYNCTOKEN04_0123456789', 'SYNCSECRET', 'SYNCTOKEN', 'SYNCFAKEKEY',
];

/** A copy of the valid body of `type`. */
export function valid(type: string): Record<string, unknown> {
  const body = VALID[type];
  if (!body) throw new Error(`no fixture for ${type}`);
  return { ...body };
}
