import {
  BadRequestError, definePath, type BackendRequest, type BackendResponse, type FieldData, type PathDefinition,
} from '@strongroom/core';
import type { Cloud1SecretsContext } from './context';
import { issueIamUser } from './iam-user';
import { readRootConfig } from './path-config-root';
import { loadRole, type RoleEntry } from './role';
import { ROLE_NAME } from './storage-keys';
import { issueSts, type StsRequest } from './sts-credentials';

/** The TTL of STS credentials when neither the request nor the role names one. */
export const DEFAULT_STS_TTL = 3600;

const FIELDS = {
  name: { type: 'string', required: true },
  role_arn: { type: 'string', description: 'the role to assume (assumed_role); required when the role lists several' },
  role_session_name: { type: 'string', description: 'session name (assumed_role); cut to 64 characters; generated when absent' },
  ttl: { type: 'duration', description: 'lifetime of STS credentials; default the role\'s default_sts_ttl, then 3600s' },
  mfa_code: { type: 'string', description: 'code of the MFA device named by the role\'s mfa_serial_number' },
} as const;

function refuse(field: string, rule: string): never {
  throw new BadRequestError(`invalid value for "${field}": ${rule}`);
}

type Via = 'creds' | 'sts';

/**
 * The credential type a request makes. A current role has one. A legacy role gives iam_user
 * through creds/ and assumed_role or federation_token through sts/, and nothing else.
 */
function pick(name: string, variants: RoleEntry[], legacy: boolean, via: Via): RoleEntry {
  if (!legacy) return variants[0] as RoleEntry;
  const wanted = via === 'creds' ? ['iam_user'] : ['assumed_role', 'federation_token'];
  const found = variants.find((v) => wanted.includes(v.credentialType));
  if (found) return found;
  const other = via === 'creds' ? 'sts' : 'creds';
  throw new BadRequestError(
    `role "${name}" was defined with the legacy "policy" or "arn" parameter: through ${via}/ it gives only ${wanted.join(' or ')} `
    + `credentials; request ${other}/${name} instead`,
  );
}

/** Checks the request's fields against the role's type; answers what STS needs. */
function stsRequest(role: RoleEntry, f: FieldData): { request: StsRequest; warnings: string[] } {
  const type = role.credentialType;
  const warnings: string[] = [];
  if (type !== 'assumed_role') {
    if (f.has('role_arn') && f.string('role_arn') !== '') refuse('role_arn', `only for assumed_role roles, not ${type}`);
    if (f.has('role_session_name') && f.string('role_session_name') !== '') refuse('role_session_name', `only for assumed_role roles, not ${type}`);
  }
  if (role.mfaSerialNumber === '' && f.string('mfa_code') !== '') refuse('mfa_code', 'the role has no mfa_serial_number');
  if (role.mfaSerialNumber !== '' && f.string('mfa_code') === '') {
    refuse('mfa_code', `required: the role's mfa_serial_number ${role.mfaSerialNumber} needs a code from that device`);
  }

  let roleArn = '';
  if (type === 'assumed_role') {
    roleArn = f.string('role_arn').trim();
    if (roleArn === '') {
      if (role.roleArns.length !== 1) refuse('role_arn', `required: the role lists ${role.roleArns.length} role ARNs; name one of them`);
      roleArn = role.roleArns[0] as string;
    } else if (!role.roleArns.includes(roleArn)) {
      refuse('role_arn', `"${roleArn}" is not one of the role's role_arns`);
    }
  }

  let ttl = f.int('ttl') > 0 ? f.int('ttl') : role.defaultStsTtl || DEFAULT_STS_TTL;
  if (role.maxStsTtl > 0 && ttl > role.maxStsTtl) {
    warnings.push(`ttl of ${ttl}s is above the role's max_sts_ttl; capped at ${role.maxStsTtl}s`);
    ttl = role.maxStsTtl;
  }
  return { request: { ttl, roleArn, roleSessionName: f.string('role_session_name').trim(), mfaCode: f.string('mfa_code').trim() }, warnings };
}

async function issue(ctx: Cloud1SecretsContext, req: BackendRequest, f: FieldData, via: Via): Promise<BackendResponse> {
  const name = f.string('name');
  const loaded = await loadRole(req.storage, name);
  if (!loaded) refuse('name', `role "${name}" does not exist`);
  if (!loaded.ok) throw new BadRequestError(`role "${name}" cannot make credentials: ${loaded.reason}`);
  const role = pick(name, loaded.variants, loaded.legacy, via);
  const config = await readRootConfig(req.storage);
  if (role.credentialType === 'iam_user') {
    for (const field of ['ttl', 'role_arn', 'role_session_name', 'mfa_code']) {
      if (f.has(field) && f.get(field) !== '' && f.get(field) !== 0) {
        refuse(field, 'not for iam_user roles (their leases follow config/lease)');
      }
    }
    return issueIamUser(ctx, req, config, name, role);
  }
  const { request, warnings } = stsRequest(role, f);
  const resp = await issueSts(ctx, req, config, name, role, request);
  return warnings.length > 0 ? { ...resp, warnings } : resp;
}

/** `creds/:name` and `sts/:name`: new credentials of a role, each under a lease. */
export function credsPaths(ctx: Cloud1SecretsContext): PathDefinition[] {
  return (['creds', 'sts'] as const).map((via) => definePath({
    pattern: `${via}/(?<name>${ROLE_NAME})`,
    fields: FIELDS,
    operations: {
      read: (req, f) => issue(ctx, req, f, via),
      update: (req, f) => issue(ctx, req, f, via),
    },
    help: via === 'creds'
      ? 'Generates credentials of a role (for legacy roles: an IAM user).'
      : 'Generates credentials of a role (for legacy roles: STS credentials).',
  }));
}
