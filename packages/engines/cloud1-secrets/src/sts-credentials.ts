/**
 * assumed_role, federation_token and session_token credentials: temporary keys from STS. The
 * provider cannot revoke them, so their lease is not renewable, lasts as long as the keys, and
 * its revocation does nothing at the provider (the keys stop working when they expire).
 */
import type { BackendRequest, BackendResponse, SecretType } from '@strongroom/core';
import type { Cloud1SecretsContext } from './context';
import type { RootConfig } from './path-config-root';
import type { SessionPolicies, StsResult } from './provider';
import type { RoleEntry } from './role';
import { generateUsername } from './username-template';

export const STS_SECRET = 'sts';

/** Longest role session name the provider takes; longer requested names are cut. */
export const ROLE_SESSION_NAME_MAX = 64;

/** What the request asked for, already checked against the role. */
export interface StsRequest {
  ttl: number;
  roleArn: string;
  roleSessionName: string;
  mfaCode: string;
}

function statementsOf(document: string): unknown[] {
  const parsed = JSON.parse(document) as { Statement?: unknown };
  if (Array.isArray(parsed.Statement)) return parsed.Statement;
  return parsed.Statement === undefined ? [] : [parsed.Statement];
}

/**
 * The role's own session policies joined with its groups': one document holding every
 * statement, and every managed policy ARN once.
 */
export function mergePolicies(own: SessionPolicies, groups: SessionPolicies[]): SessionPolicies {
  const documents = [own.policyDocument, ...groups.map((g) => g.policyDocument)].filter((d) => d !== '');
  const policyArns = [...new Set([...own.policyArns, ...groups.flatMap((g) => g.policyArns)])];
  if (documents.length <= 1) return { policyDocument: documents[0] ?? '', policyArns };
  return { policyDocument: JSON.stringify({ Version: '2012-10-17', Statement: documents.flatMap(statementsOf) }), policyArns };
}

async function sessionPolicies(ctx: Cloud1SecretsContext, config: RootConfig, role: RoleEntry): Promise<SessionPolicies> {
  const groups = await ctx.provider.groupPolicies(config, role.iamGroups);
  return mergePolicies({ policyDocument: role.policyDocument, policyArns: role.policyArns }, groups);
}

export async function issueSts(
  ctx: Cloud1SecretsContext, req: BackendRequest, config: RootConfig, roleName: string, role: RoleEntry, request: StsRequest,
): Promise<BackendResponse> {
  const displayName = req.caller?.displayName ?? '';
  let result: StsResult;
  switch (role.credentialType) {
    case 'assumed_role': {
      const sessionName = request.roleSessionName !== ''
        ? request.roleSessionName.slice(0, ROLE_SESSION_NAME_MAX)
        : generateUsername(config.usernameTemplate, 'IAM', displayName, roleName, ctx.clock);
      result = await ctx.provider.assumeRole(config, {
        roleArn: request.roleArn, sessionName, ttl: request.ttl, ...(await sessionPolicies(ctx, config, role)),
      });
      break;
    }
    case 'federation_token': {
      const name = generateUsername(config.usernameTemplate, 'STS', displayName, roleName, ctx.clock);
      result = await ctx.provider.federationToken(config, { name, ttl: request.ttl, ...(await sessionPolicies(ctx, config, role)) });
      break;
    }
    case 'session_token':
      result = await ctx.provider.sessionToken(config, {
        ttl: request.ttl, ...(role.mfaSerialNumber ? { serialNumber: role.mfaSerialNumber, tokenCode: request.mfaCode } : {}),
      });
      break;
    default:
      throw new Error(`${role.credentialType} is not an STS credential type`);
  }
  return {
    data: {
      access_key: result.accessKeyId, secret_key: result.secretAccessKey,
      // Both names: older clients read security_token, newer ones session_token.
      security_token: result.sessionToken, session_token: result.sessionToken,
      ttl: request.ttl, ...(result.arn ? { arn: result.arn } : {}),
    },
    secret: {
      type: STS_SECRET, ttl: request.ttl, renewable: false,
      internal: { credential_type: role.credentialType, role: roleName, access_key: result.accessKeyId },
    },
  };
}

/** STS keys cannot be revoked at the provider: ending the lease only forgets them. */
export const stsSecret: SecretType = {
  async revoke() {},
};
