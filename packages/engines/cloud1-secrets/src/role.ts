/**
 * Roles of the secrets engine: what a credential request makes. A role has one credential type
 * and the fields that type takes; a role written with the legacy `policy` or `arn` parameter
 * keeps only that value, and its credential types follow from it (see `legacyTypes`).
 *
 * Validation is pure and runs both on write and on every read, so a stored role that no longer
 * validates (written by an earlier release, or by hand) is shown as `invalid_data` instead of
 * being used.
 */
import { BadRequestError, putJson, type LogicalStorage } from '@strongroom/core';
import { KEYS } from './storage-keys';

export const CREDENTIAL_TYPES = ['iam_user', 'assumed_role', 'federation_token', 'session_token'] as const;
export type CredentialType = (typeof CREDENTIAL_TYPES)[number];

export interface RoleEntry {
  credentialType: CredentialType;
  roleArns: string[];
  policyArns: string[];
  /** Compact JSON, or ''. */
  policyDocument: string;
  iamGroups: string[];
  iamTags: Record<string, string>;
  /** Seconds; 0 = unset. */
  defaultStsTtl: number;
  maxStsTtl: number;
  userPath: string;
  permissionsBoundaryArn: string;
  mfaSerialNumber: string;
}

/** A role written with the legacy parameters: exactly one of them. */
export interface LegacyRole {
  policy?: string;
  arn?: string;
}

export type StoredRole = { version: 1; role: RoleEntry } | { version: 1; legacy: LegacyRole };

export function emptyRole(credentialType: CredentialType): RoleEntry {
  return {
    credentialType, roleArns: [], policyArns: [], policyDocument: '', iamGroups: [], iamTags: {}, defaultStsTtl: 0, maxStsTtl: 0,
    userPath: '/', permissionsBoundaryArn: '', mfaSerialNumber: '',
  };
}

function refuse(field: string, rule: string): never {
  throw new BadRequestError(`invalid value for "${field}": ${rule}`);
}

const ROLE_ARN = /^arn:[\w-]+:iam::\d{12}:role\/[\x21-\x7e]+$/;
const POLICY_ARN = /^arn:[\w-]+:iam::(?:\d{12}|aws):policy\/[\x21-\x7e]+$/;
const USER_PATH = /^\/(?:[\x21-\x7e]*\/)?$/;

/** A policy document as the provider takes it: a JSON object, stored compact. */
export function compactPolicy(field: string, text: string): string {
  if (text.trim() === '') return '';
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return refuse(field, 'must be a JSON policy document');
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) refuse(field, 'must be a JSON object (an IAM policy document)');
  return JSON.stringify(parsed);
}

/** `iam_tags` as a list of `key=value` strings (or a comma-separated string, or an object). */
export function parseTags(value: unknown): Record<string, string> {
  const tags: Record<string, string> = {};
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      if (typeof v !== 'string') refuse('iam_tags', `the value of tag "${k}" must be a string`);
      tags[k] = v;
    }
  } else {
    const items = Array.isArray(value) ? value : typeof value === 'string' ? value.split(',') : refuse('iam_tags', 'expected a list of "key=value" strings');
    for (const item of items) {
      if (typeof item !== 'string') refuse('iam_tags', 'expected a list of "key=value" strings');
      if (item.trim() === '') continue;
      const eq = item.indexOf('=');
      if (eq <= 0) refuse('iam_tags', `"${item}" is not of the form key=value`);
      tags[item.slice(0, eq).trim()] = item.slice(eq + 1).trim();
    }
  }
  for (const [k, v] of Object.entries(tags)) {
    if (k.length > 128) refuse('iam_tags', `the key "${k.slice(0, 20)}..." is longer than 128 characters`);
    if (v.length > 256) refuse('iam_tags', `the value of "${k}" is longer than 256 characters`);
  }
  if (Object.keys(tags).length > 50) refuse('iam_tags', 'at most 50 tags');
  return tags;
}

/** Which fields each credential type takes; any other set field is refused naming it. */
const ALLOWED: Record<CredentialType, ReadonlySet<string>> = {
  iam_user: new Set(['policy_arns', 'policy_document', 'iam_groups', 'iam_tags', 'user_path', 'permissions_boundary_arn']),
  assumed_role: new Set(['role_arns', 'policy_arns', 'policy_document', 'iam_groups', 'default_sts_ttl', 'max_sts_ttl']),
  federation_token: new Set(['policy_arns', 'policy_document', 'iam_groups', 'default_sts_ttl', 'max_sts_ttl']),
  session_token: new Set(['mfa_serial_number']),
};

/** The fields of a role that hold something other than their default. */
function setFields(role: RoleEntry): string[] {
  const set: string[] = [];
  if (role.roleArns.length > 0) set.push('role_arns');
  if (role.policyArns.length > 0) set.push('policy_arns');
  if (role.policyDocument !== '') set.push('policy_document');
  if (role.iamGroups.length > 0) set.push('iam_groups');
  if (Object.keys(role.iamTags).length > 0) set.push('iam_tags');
  if (role.defaultStsTtl > 0) set.push('default_sts_ttl');
  if (role.maxStsTtl > 0) set.push('max_sts_ttl');
  if (role.userPath !== '/') set.push('user_path');
  if (role.permissionsBoundaryArn !== '') set.push('permissions_boundary_arn');
  if (role.mfaSerialNumber !== '') set.push('mfa_serial_number');
  return set;
}

const TYPES_OF: Record<string, string> = {
  role_arns: 'assumed_role', policy_arns: 'iam_user, assumed_role and federation_token', policy_document: 'iam_user, assumed_role and federation_token',
  iam_groups: 'iam_user, assumed_role and federation_token', iam_tags: 'iam_user', default_sts_ttl: 'assumed_role and federation_token',
  max_sts_ttl: 'assumed_role and federation_token', user_path: 'iam_user', permissions_boundary_arn: 'iam_user', mfa_serial_number: 'session_token',
};

/** Checks a role against the spec's rules; throws a 400 naming the first field that breaks one. */
export function validateRole(role: RoleEntry): void {
  if (!(CREDENTIAL_TYPES as readonly string[]).includes(role.credentialType)) {
    refuse('credential_type', `must be one of ${CREDENTIAL_TYPES.join(', ')}`);
  }
  const type = role.credentialType;
  for (const field of setFields(role)) {
    if (!ALLOWED[type].has(field)) refuse(field, `only for the ${TYPES_OF[field]} credential type(s), not ${type}`);
  }
  if (type === 'assumed_role' && role.roleArns.length === 0) refuse('role_arns', 'required when credential_type is assumed_role');
  if ((type === 'iam_user' || type === 'federation_token') && role.policyArns.length === 0 && role.policyDocument === '') {
    refuse('policy_document', `at least one of "policy_arns" or "policy_document" is required when credential_type is ${type}`);
  }
  for (const arn of role.roleArns) if (!ROLE_ARN.test(arn)) refuse('role_arns', `"${arn}" is not an IAM role ARN (arn:<partition>:iam::<account>:role/<name>)`);
  for (const arn of role.policyArns) if (!POLICY_ARN.test(arn)) refuse('policy_arns', `"${arn}" is not a managed policy ARN (arn:<partition>:iam::<account>:policy/<name>)`);
  if (role.policyDocument !== '') compactPolicy('policy_document', role.policyDocument);
  if (role.permissionsBoundaryArn !== '' && !POLICY_ARN.test(role.permissionsBoundaryArn)) {
    refuse('permissions_boundary_arn', `"${role.permissionsBoundaryArn}" is not a managed policy ARN`);
  }
  if (role.userPath.length > 512 || !USER_PATH.test(role.userPath)) {
    refuse('user_path', 'must begin and end with "/" and contain printable ASCII characters only (at most 512)');
  }
  for (const group of role.iamGroups) if (!/^[\w+=,.@-]{1,128}$/.test(group)) refuse('iam_groups', `"${group}" is not a valid group name`);
  if (role.defaultStsTtl > 0 && role.maxStsTtl > 0 && role.defaultStsTtl > role.maxStsTtl) {
    refuse('default_sts_ttl', `must not exceed max_sts_ttl (${role.maxStsTtl}s)`);
  }
  parseTags(role.iamTags);
}

/**
 * What a legacy role gives: a policy document makes iam_user (through creds/) and
 * federation_token (through sts/) credentials; a policy ARN makes iam_user credentials; a role
 * ARN makes assumed_role credentials.
 */
export function legacyRoles(legacy: LegacyRole): RoleEntry[] {
  if (legacy.policy !== undefined) {
    const doc = compactPolicy('policy', legacy.policy);
    if (doc === '') refuse('policy', 'must be a JSON policy document');
    return [
      { ...emptyRole('iam_user'), policyDocument: doc },
      { ...emptyRole('federation_token'), policyDocument: doc },
    ];
  }
  const arn = legacy.arn ?? '';
  if (ROLE_ARN.test(arn)) return [{ ...emptyRole('assumed_role'), roleArns: [arn] }];
  if (POLICY_ARN.test(arn)) return [{ ...emptyRole('iam_user'), policyArns: [arn] }];
  return refuse('arn', `"${arn}" is neither a managed policy ARN nor a role ARN`);
}

/** A role as storage holds it, checked; or why it cannot be used. */
export type LoadedRole =
  | { ok: true; stored: StoredRole; variants: RoleEntry[]; legacy: boolean }
  | { ok: false; raw: string; reason: string };

/**
 * Reads and checks a role. Besides the current format this accepts the bare policy text or ARN
 * an earlier release stored for legacy roles.
 */
export async function loadRole(storage: LogicalStorage, name: string): Promise<LoadedRole | null> {
  const buf = await storage.get(KEYS.rolePrefix + name);
  if (!buf) return null;
  const raw = buf.toString('utf8');
  try {
    let stored: StoredRole;
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch {
      parsed = undefined;
    }
    if (parsed !== null && typeof parsed === 'object' && (parsed as { version?: unknown }).version === 1) {
      stored = parsed as StoredRole;
    } else if (typeof parsed === 'object' && parsed !== null && 'Statement' in parsed) {
      stored = { version: 1, legacy: { policy: raw } };
    } else if (raw.startsWith('arn:')) {
      stored = { version: 1, legacy: { arn: raw.trim() } };
    } else {
      return { ok: false, raw, reason: 'the stored role is in no format this release knows' };
    }
    if ('legacy' in stored) return { ok: true, stored, variants: legacyRoles(stored.legacy ?? {}), legacy: true };
    if (stored.role === null || typeof stored.role !== 'object') return { ok: false, raw, reason: 'the stored role has no role data' };
    const role = { ...emptyRole(stored.role.credentialType), ...stored.role };
    validateRole(role);
    return { ok: true, stored, variants: [role], legacy: false };
  } catch (err) {
    if (err instanceof BadRequestError) return { ok: false, raw, reason: err.message };
    throw err;
  }
}

export function storeRole(storage: LogicalStorage, name: string, stored: StoredRole): Promise<void> {
  return putJson(storage, KEYS.rolePrefix + name, stored);
}

/** A role as read answers it; a legacy role shows the types and fields its value gives. */
export function roleView(variants: RoleEntry[]): Record<string, unknown> {
  const first = variants[0] as RoleEntry;
  return {
    credential_type: variants.map((v) => v.credentialType).join(','),
    role_arns: first.roleArns,
    policy_arns: first.policyArns,
    policy_document: first.policyDocument,
    iam_groups: first.iamGroups,
    iam_tags: first.iamTags,
    default_sts_ttl: first.defaultStsTtl,
    max_sts_ttl: first.maxStsTtl,
    user_path: first.userPath,
    permissions_boundary_arn: first.permissionsBoundaryArn,
    mfa_serial_number: first.mfaSerialNumber,
  };
}
