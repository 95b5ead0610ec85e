/**
 * Role tags: a value an operator puts in a tag of an instance to narrow what that instance gets
 * from a role (fewer policies, a shorter max TTL, one instance, no reauthentication). The value
 * carries an HMAC under the role's key, so an instance cannot widen its own tag.
 *
 * Format: `v1:<nonce>:r=<role>:d=<bool>:m=<bool>[:p=<policy,...>][:i=<instance id>][:t=<seconds>]:<mac>`
 * where the MAC is base64 HMAC-SHA256 over everything before the last colon.
 */
import { createHmac, createSecretKey, randomBytes, timingSafeEqual } from 'node:crypto';
import { BadRequestError } from '@strongroom/core';
import type { RoleEntry } from './role';

export interface RoleTag {
  role: string;
  /**
   * Absent: the role's policies. Present and empty: only `default` when the role grants it,
   * else the role's policies (see `tagTokenPolicies`).
   */
  policies?: string[];
  maxTtl: number;
  instanceId: string;
  allowInstanceMigration: boolean;
  disallowReauthentication: boolean;
}

const VERSION = 'v1';

function mac(key: string, text: string): string {
  // A KeyObject: node 24 checks a raw key's type on every HMAC at several times the HMAC's cost.
  return createHmac('sha256', createSecretKey(Buffer.from(key, 'base64'))).update(text).digest('base64');
}

export function createRoleTagValue(tag: RoleTag, hmacKey: string): string {
  const parts = [VERSION, randomBytes(8).toString('base64'), `r=${tag.role}`, `d=${tag.disallowReauthentication}`, `m=${tag.allowInstanceMigration}`];
  if (tag.policies !== undefined) parts.push(`p=${tag.policies.join(',')}`);
  if (tag.instanceId !== '') parts.push(`i=${tag.instanceId}`);
  if (tag.maxTtl > 0) parts.push(`t=${tag.maxTtl}`);
  const text = parts.join(':');
  return `${text}:${mac(hmacKey, text)}`;
}

/** Reads a tag value without checking its MAC (that needs the role, which the value names). */
export function parseRoleTagValue(value: string): RoleTag {
  const parts = value.split(':');
  if (parts.length < 6 || parts[0] !== VERSION) throw new BadRequestError('invalid role tag: not a v1 role tag value');
  const tag: RoleTag = { role: '', maxTtl: 0, instanceId: '', allowInstanceMigration: false, disallowReauthentication: false };
  for (const part of parts.slice(2, -1)) {
    const eq = part.indexOf('=');
    const key = part.slice(0, eq);
    const v = part.slice(eq + 1);
    switch (key) {
      case 'r': tag.role = v; break;
      case 'd': tag.disallowReauthentication = v === 'true'; break;
      case 'm': tag.allowInstanceMigration = v === 'true'; break;
      case 'p': tag.policies = v === '' ? [] : v.split(','); break;
      case 'i': tag.instanceId = v; break;
      case 't':
        if (!/^\d+$/.test(v)) throw new BadRequestError('invalid role tag: bad max TTL');
        tag.maxTtl = Number(v);
        break;
      default: throw new BadRequestError(`invalid role tag: unknown item "${key}"`);
    }
  }
  if (tag.role === '') throw new BadRequestError('invalid role tag: it names no role');
  return tag;
}

/** Whether the value's MAC is the role key's, compared in constant time. */
export function roleTagMacValid(value: string, hmacKey: string): boolean {
  const cut = value.lastIndexOf(':');
  const given = Buffer.from(value.slice(cut + 1), 'utf8');
  const expected = Buffer.from(mac(hmacKey, value.slice(0, cut)), 'utf8');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** A deny-list path segment as given: the tag value itself, or its base64 (standard or url-safe). */
export function tagValueFromInput(input: string): string {
  if (input.startsWith(`${VERSION}:`)) return input;
  const decoded = Buffer.from(input, input.includes('-') || input.includes('_') ? 'base64url' : 'base64').toString('utf8');
  if (decoded.startsWith(`${VERSION}:`)) return decoded;
  throw new BadRequestError('invalid value for "role_tag": neither a role tag value nor its base64 encoding');
}

/** Policy names as core compares them (it trims and lower-cases before issuing the token). */
function policyKey(name: string): string {
  return name.trim().toLowerCase();
}

/** Whether a token of the role carries `default`: token_policies names it, or token_no_default_policy is off. */
export function roleGrantsDefault(role: RoleEntry): boolean {
  return !role.tokenNoDefaultPolicy || role.tokenPolicies.some((p) => policyKey(p) === 'default');
}

/**
 * The tag policies the role would not grant. A tag only narrows its role (spec: "Capabilities
 * of a tag must be a strict subset of the role's capabilities"), so `default` is allowed only
 * when the role's tokens carry it.
 */
export function tagPoliciesOutsideRole(role: RoleEntry, policies: readonly string[]): string[] {
  const granted = new Set(role.tokenPolicies.map(policyKey));
  if (roleGrantsDefault(role)) granted.add('default');
  return policies.filter((p) => !granted.has(policyKey(p)));
}

/**
 * The token policies for a login with a tag whose policies are `policies` (undefined: the tag
 * sets none, so the role's). The spec's rule for the tag field: "must be a subset of the role's
 * policies; set but empty gives only `default`". When the role does not grant `default`
 * (token_no_default_policy, and `default` not among its token_policies), giving `default` would
 * widen the role and giving the role's policies would widen the tag, so the token gets none.
 */
export function tagTokenPolicies(role: RoleEntry, policies: readonly string[] | undefined): string[] {
  if (policies === undefined) return role.tokenPolicies;
  if (policies.length > 0) return [...policies];
  return roleGrantsDefault(role) ? ['default'] : [];
}

/** A tag may only take away instance migration: the effective value is the role's AND the tag's. */
export function effectiveAllowInstanceMigration(role: RoleEntry, tag: RoleTag | undefined): boolean {
  return role.allowInstanceMigration && (tag === undefined || tag.allowInstanceMigration);
}
