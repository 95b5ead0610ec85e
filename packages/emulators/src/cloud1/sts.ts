/**
 * STS (awsQuery, version 2011-06-15): caller identity and the three ways to get temporary
 * credentials. Temporary keys are registered with the signature check at once, so the caller
 * can use them on IAM, STS and EC2 until they expire by the emulator's clock.
 *
 * AssumeRole evaluates the role's trust policy (see `trustAllows`); identity policies are not
 * evaluated anywhere in the emulator.
 */
import { accessDenied, malformedPolicy, validationError } from './errors';
import { memberStructs, optional, optionalInt, required } from './query';
import type { ActionHandler, CallContext } from './service';
import { principalArn, principalUserId, type Principal, type Role, type TemporaryCredentials } from './state';
import { totpMatches } from './totp';
import { isoSeconds, type XmlObject } from './xml';

const SESSION_NAME_PATTERN = /^[\w+=,.@-]{2,64}$/;
const ROLE_ARN_PATTERN = /^arn:aws:iam::(\d{12}):role(\/(?:[\u0021-\u007e]*\/)?)?([\w+=,.@-]+)$/;

const credentialsXml = (c: TemporaryCredentials): XmlObject => ({
  AccessKeyId: c.accessKeyId,
  SecretAccessKey: c.secretAccessKey,
  SessionToken: c.sessionToken,
  Expiration: isoSeconds(c.expiration),
});

function durationParam(ctx: CallContext, min: number, max: number, fallback: number, tooLong: string): number {
  const seconds = optionalInt(ctx.params, 'DurationSeconds') ?? fallback;
  if (seconds < min) {
    throw validationError(
      `1 validation error detected: Value '${seconds}' at 'durationSeconds' failed to satisfy constraint: ` +
        `Member must have value greater than or equal to ${min}`,
    );
  }
  if (seconds > max) throw validationError(tooLong);
  return seconds;
}

/**
 * Session policies are checked for syntax and reported through PackedPolicySize (a percentage
 * of the provider's packed limit), but, like every policy here, not evaluated.
 */
function packedPolicySize(ctx: CallContext): number | undefined {
  const policy = optional(ctx.params, 'Policy');
  const arns = memberStructs(ctx.params, 'PolicyArns').map((field) => field('arn') ?? '');
  if (policy === undefined && arns.length === 0) return undefined;
  let size = 0;
  if (policy !== undefined) {
    try {
      JSON.parse(policy);
    } catch {
      throw malformedPolicy('The policy is not in the valid JSON format.');
    }
    if (policy.length > 2048) throw validationError("Member 'policy' must have length less than or equal to 2048");
    size += policy.length;
  }
  for (const arn of arns) size += arn.length;
  return Math.max(1, Math.min(100, Math.ceil((size * 100) / 2048)));
}

/** Long-term credentials only: the provider refuses these calls from temporary ones. */
function requireLongTerm(ctx: CallContext, action: string): void {
  if (ctx.record.kind === 'temporary') throw accessDenied(`Cannot call ${action} with session credentials`);
}

type Statement = Record<string, unknown>;

function statements(document: string): Statement[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(document);
  } catch {
    return [];
  }
  const raw = (parsed as { Statement?: unknown }).Statement;
  const list = Array.isArray(raw) ? raw : [raw];
  return list.filter((s): s is Statement => typeof s === 'object' && s !== null);
}

const asList = (value: unknown): string[] =>
  Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : typeof value === 'string' ? [value] : [];

function globMatches(pattern: string, value: string): boolean {
  const regex = new RegExp('^' + pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.') + '$', 'i');
  return regex.test(value);
}

/** The identifiers a trust policy may name the caller by. */
function callerIdentifiers(caller: Principal): string[] {
  const ids = [caller.accountId, `arn:aws:iam::${caller.accountId}:root`, principalArn(caller)];
  if (caller.kind === 'assumed-role') ids.push(caller.roleArn);
  return ids;
}

function principalMatches(principal: unknown, caller: Principal): boolean {
  if (principal === '*') return true;
  if (typeof principal !== 'object' || principal === null) return false;
  const aws = asList((principal as { AWS?: unknown }).AWS);
  const ids = callerIdentifiers(caller);
  return aws.some((p) => p === '*' || ids.includes(p));
}

/**
 * Conditions the emulator understands: `sts:ExternalId` under StringEquals/StringLike and
 * `aws:MultiFactorAuthPresent` under Bool. Any other condition is treated as not satisfied, so a
 * trust policy never grants more here than it would on the provider.
 */
function conditionsHold(condition: unknown, facts: { externalId: string | undefined; mfa: boolean }): boolean {
  if (condition === undefined) return true;
  if (typeof condition !== 'object' || condition === null) return false;
  for (const [operator, tests] of Object.entries(condition as Record<string, unknown>)) {
    if (typeof tests !== 'object' || tests === null) return false;
    for (const [key, expected] of Object.entries(tests as Record<string, unknown>)) {
      const values = asList(expected);
      const k = key.toLowerCase();
      if (k === 'sts:externalid' && (operator === 'StringEquals' || operator === 'StringLike')) {
        const actual = facts.externalId;
        if (actual === undefined) return false;
        if (!values.some((v) => (operator === 'StringLike' ? globMatches(v, actual) : v === actual))) return false;
      } else if (k === 'aws:multifactorauthpresent' && operator === 'Bool') {
        if (!values.includes(String(facts.mfa))) return false;
      } else {
        return false;
      }
    }
  }
  return true;
}

export function trustAllows(role: Role, caller: Principal, facts: { externalId: string | undefined; mfa: boolean }): boolean {
  let allowed = false;
  for (const statement of statements(role.assumeRolePolicyDocument)) {
    if (!asList(statement.Action).some((a) => globMatches(a, 'sts:AssumeRole'))) continue;
    if (!principalMatches(statement.Principal, caller)) continue;
    if (!conditionsHold(statement.Condition, facts)) continue;
    if (statement.Effect === 'Deny') return false;
    if (statement.Effect === 'Allow') allowed = true;
  }
  return allowed;
}

const actions: Array<[string, ActionHandler]> = [
  [
    'GetCallerIdentity',
    (ctx) => ({ UserId: principalUserId(ctx.caller), Account: ctx.caller.accountId, Arn: principalArn(ctx.caller) }),
  ],
  [
    'AssumeRole',
    (ctx) => {
      const roleArn = required(ctx.params, 'RoleArn');
      const sessionName = required(ctx.params, 'RoleSessionName');
      if (!SESSION_NAME_PATTERN.test(sessionName)) {
        throw validationError(
          `1 validation error detected: Value '${sessionName}' at 'roleSessionName' failed to satisfy constraint: ` +
            'Member must satisfy regular expression pattern: [\\w+=,.@-]* and have length between 2 and 64',
        );
      }
      const denied = accessDenied(
        `User: ${principalArn(ctx.caller)} is not authorized to perform: sts:AssumeRole on resource: ${roleArn}`,
      );
      const match = ROLE_ARN_PATTERN.exec(roleArn);
      if (!match) throw validationError(`${roleArn} is invalid`);
      if (ctx.caller.kind === 'federated-user') throw denied;
      const account = ctx.state.accounts.get(match[1] ?? '');
      const role = account?.roles.get((match[3] ?? '').toLowerCase());
      if (!account || !role || role.arn !== roleArn) throw denied;
      const mfa = ctx.record.kind === 'temporary' && ctx.record.credentials.mfaAuthenticated;
      if (!trustAllows(role, ctx.caller, { externalId: optional(ctx.params, 'ExternalId'), mfa })) throw denied;

      // Role chaining (assuming a role with role credentials) is capped at one hour.
      const chained = ctx.caller.kind === 'assumed-role';
      const max = chained ? Math.min(3600, role.maxSessionDuration) : role.maxSessionDuration;
      const duration = durationParam(
        ctx,
        900,
        max,
        3600,
        chained && role.maxSessionDuration > 3600
          ? 'The requested DurationSeconds exceeds the 1 hour session limit for roles assumed by role chaining.'
          : 'The requested DurationSeconds exceeds the MaxSessionDuration set for this role.',
      );
      const packed = packedPolicySize(ctx);
      const principal = ctx.state.roleSession(role, account.id, sessionName);
      const credentials = ctx.state.issueTemporary(principal, duration, 'AssumeRole');
      return {
        Credentials: credentialsXml(credentials),
        AssumedRoleUser: { AssumedRoleId: principalUserId(principal), Arn: principalArn(principal) },
        PackedPolicySize: packed,
      };
    },
  ],
  [
    'GetFederationToken',
    (ctx) => {
      if (ctx.record.kind === 'temporary') throw accessDenied('Cannot call GetFederationToken with session credentials');
      const name = required(ctx.params, 'Name');
      if (!/^[\w+=,.@-]{2,32}$/.test(name)) {
        throw validationError(
          `1 validation error detected: Value '${name}' at 'name' failed to satisfy constraint: ` +
            'Member must satisfy regular expression pattern: [\\w+=,.@-]* and have length between 2 and 32',
        );
      }
      const root = ctx.caller.kind === 'root';
      const duration = durationParam(
        ctx,
        900,
        root ? 3600 : 129600,
        root ? 3600 : 43200,
        'The requested DurationSeconds exceeds the maximum allowed for GetFederationToken.',
      );
      const packed = packedPolicySize(ctx);
      const principal: Principal = { kind: 'federated-user', accountId: ctx.caller.accountId, name };
      const credentials = ctx.state.issueTemporary(principal, duration, 'GetFederationToken');
      return {
        Credentials: credentialsXml(credentials),
        FederatedUser: { FederatedUserId: principalUserId(principal), Arn: principalArn(principal) },
        PackedPolicySize: packed,
      };
    },
  ],
  [
    'GetSessionToken',
    (ctx) => {
      requireLongTerm(ctx, 'GetSessionToken');
      const root = ctx.caller.kind === 'root';
      const duration = durationParam(
        ctx,
        900,
        root ? 3600 : 129600,
        root ? 3600 : 43200,
        'The requested DurationSeconds exceeds the maximum allowed for GetSessionToken.',
      );
      const serialNumber = optional(ctx.params, 'SerialNumber');
      const tokenCode = optional(ctx.params, 'TokenCode');
      let mfa = false;
      if (serialNumber !== undefined || tokenCode !== undefined) {
        if (serialNumber === undefined || tokenCode === undefined) {
          throw accessDenied('MultiFactorAuthentication failed, must provide both MFA serial number and one time pass code.');
        }
        if (!/^\d{6}$/.test(tokenCode)) {
          throw validationError(
            `1 validation error detected: Value '${tokenCode}' at 'tokenCode' failed to satisfy constraint: ` +
              'Member must satisfy regular expression pattern: [\\d]* and have length 6',
          );
        }
        const device = ctx.state.mfaDevice(serialNumber);
        const ownsDevice =
          device !== undefined &&
          ctx.caller.kind === 'user' &&
          device.accountId === ctx.caller.accountId &&
          device.userName.toLowerCase() === ctx.caller.userName.toLowerCase();
        if (!ownsDevice) throw accessDenied('MultiFactorAuthentication failed, unable to validate MFA code.');
        const valid = device.fixedCode !== undefined ? device.fixedCode === tokenCode : totpMatches(device.totpSecret ?? '', tokenCode, ctx.now);
        if (!valid) throw accessDenied('MultiFactorAuthentication failed with invalid MFA one time pass code.');
        mfa = true;
      }
      const credentials = ctx.state.issueTemporary(ctx.caller, duration, 'GetSessionToken', mfa);
      return { Credentials: credentialsXml(credentials) };
    },
  ],
];

/** GetFederationToken credentials may call no STS action but GetCallerIdentity. */
export function checkStsAllowed(ctx: CallContext, action: string): void {
  if (ctx.record.kind === 'temporary' && ctx.record.credentials.origin === 'GetFederationToken' && action !== 'GetCallerIdentity') {
    throw accessDenied(`Cannot call ${action} with credentials obtained from GetFederationToken.`);
  }
}

export const STS_ACTIONS: ReadonlyMap<string, ActionHandler> = new Map(actions);
