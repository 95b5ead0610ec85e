/**
 * The `vm` login: a signed instance identity document proves which instance is calling; the
 * compute API proves it is running and meets the role; the identity access list and the client
 * nonce stop a copied document from being replayed by someone else.
 */
import { randomUUID, timingSafeEqual } from 'node:crypto';
import {
  BadRequestError, PermissionDeniedError, type BackendRequest, type BackendResponse, type FieldData,
} from '@strongroom/core';
import { readAccessListEntry, readDenyListEntry, withAccessListEntry, writeAccessListEntry, type AccessListEntry } from './access-list';
import type { Cloud1Context } from './context';
import { documentFromPkcs7, documentFromSignature, type IdentityDocument } from './identity-document';
import { verifyInstance } from './instance-check';
import { checkLoginAddress, selectMetadata, shortest, tokenParameters } from './login-common';
import { readClientConfig } from './path-config-client';
import { verifyingCertificates } from './path-config-certificate';
import { readIdentityConfig } from './path-config-identity';
import { normalizeRoleName, readRole, type RoleEntry } from './role';
import {
  effectiveAllowInstanceMigration, parseRoleTagValue, roleTagMacValid, tagPoliciesOutsideRole, tagTokenPolicies, type RoleTag,
} from './role-tag';

const MAX_NONCE_LENGTH = 128;

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  return x.length === y.length && timingSafeEqual(x, y);
}

async function verifiedDocument(req: BackendRequest, f: FieldData): Promise<IdentityDocument> {
  const certificates = await verifyingCertificates(req.storage);
  const pkcs7 = f.string('pkcs7');
  const identity = f.string('identity');
  const signature = f.string('signature');
  if (pkcs7 !== '') {
    if (identity !== '' || signature !== '') {
      throw new BadRequestError('invalid value for "pkcs7": give either "pkcs7" alone, or "identity" with "signature", not both');
    }
    return documentFromPkcs7(pkcs7, certificates);
  }
  if (identity === '') throw new BadRequestError('missing required field "identity": it goes with "signature" (or give "pkcs7")');
  if (signature === '') throw new BadRequestError('missing required field "signature": it goes with "identity" (or give "pkcs7")');
  return documentFromSignature(identity, signature, certificates);
}

/** The role tag on the instance, verified and checked against the role and the deny list. */
async function roleTagOf(
  req: BackendRequest, roleName: string, role: RoleEntry, instanceId: string, tags: Array<{ Key?: string; Value?: string }>,
): Promise<RoleTag | undefined> {
  if (role.roleTag === '') return undefined;
  const value = tags.find((t) => t.Key === role.roleTag)?.Value;
  if (!value) throw new PermissionDeniedError(`instance ${instanceId} has no tag "${role.roleTag}", which role "${roleName}" requires`);
  let tag: RoleTag;
  try {
    tag = parseRoleTagValue(value);
  } catch (err) {
    throw new PermissionDeniedError(`the role tag on instance ${instanceId} is not valid: ${(err as Error).message}`);
  }
  if (tag.role !== roleName || !roleTagMacValid(value, role.hmacKey)) {
    throw new PermissionDeniedError(`the role tag on instance ${instanceId} was not made by role "${roleName}"`);
  }
  if (tag.instanceId !== '' && tag.instanceId !== instanceId) {
    throw new PermissionDeniedError(`the role tag on instance ${instanceId} is for instance ${tag.instanceId}`);
  }
  if (await readDenyListEntry(req.storage, value)) throw new PermissionDeniedError(`the role tag on instance ${instanceId} is deny-listed`);
  // The role's policies may have shrunk since the tag was made (or it may have turned on token_no_default_policy).
  const outside = tagPoliciesOutsideRole(role, tag.policies ?? []);
  if (outside.length > 0) {
    throw new PermissionDeniedError(`the role tag on instance ${instanceId} asks for policies the role no longer grants: ${outside.join(', ')}`);
  }
  return tag;
}

/**
 * The nonce rules against what the access list remembers of the instance. Answers the nonce
 * to store and whether it was generated here (and so must be returned to the client).
 */
function checkNonce(
  doc: IdentityDocument, stored: AccessListEntry | null, given: string | undefined, disallow: boolean, allowMigration: boolean,
): { nonce: string; generated: boolean; disallow: boolean } {
  if (given !== undefined && given.length > MAX_NONCE_LENGTH) {
    throw new BadRequestError(`invalid value for "nonce": at most ${MAX_NONCE_LENGTH} characters`);
  }
  if (stored) {
    if (stored.disallowReauthentication || disallow) {
      throw new PermissionDeniedError(
        `reauthentication is disabled for instance ${doc.instanceId}; delete its identity-accesslist entry to allow a new login`,
      );
    }
    const newer = Date.parse(doc.pendingTime) > Date.parse(stored.pendingTime);
    if (given === undefined || given === '' || !sameSecret(given, stored.clientNonce)) {
      if (!allowMigration) {
        throw new PermissionDeniedError(`client nonce mismatch for instance ${doc.instanceId}: a reauthentication must present the nonce of the first login`);
      }
      if (!newer) {
        throw new PermissionDeniedError(
          `client nonce mismatch for instance ${doc.instanceId}, and its identity document is not newer (pendingTime) than at the last login`,
        );
      }
    }
    if (Date.parse(doc.pendingTime) < Date.parse(stored.pendingTime)) {
      throw new PermissionDeniedError(`the identity document of instance ${doc.instanceId} is older than the one of its previous login`);
    }
  }
  if (disallow) return { nonce: '', generated: false, disallow: true };
  // Present but empty: the client asks never to log in again with this document.
  if (given === '') return { nonce: '', generated: false, disallow: true };
  if (given === undefined) return { nonce: randomUUID(), generated: true, disallow: false };
  return { nonce: given, generated: false, disallow: false };
}

export async function loginVm(ctx: Cloud1Context, req: BackendRequest, f: FieldData): Promise<BackendResponse> {
  const doc = await verifiedDocument(req, f);
  const roleName = normalizeRoleName(f.string('role') || doc.imageId);
  const role = await readRole(req.storage, roleName);
  if (!role) {
    throw new PermissionDeniedError(
      f.string('role') ? `role "${roleName}" does not exist` : `no role was given and no role is named after the image ID "${doc.imageId}"`,
    );
  }
  if (role.authType !== 'vm') throw new PermissionDeniedError(`role "${roleName}" has auth_type ${role.authType}, not vm`);
  checkLoginAddress(req, roleName, role);

  const config = await readClientConfig(req.storage);
  const instance = await verifyInstance(ctx, req.storage, config, roleName, role, {
    accountId: doc.accountId, region: doc.region, instanceId: doc.instanceId,
  });
  const tag = await roleTagOf(req, roleName, role, doc.instanceId, instance.Tags ?? []);

  const tagMaxTtl = tag?.maxTtl ?? 0;
  const nonce = await withAccessListEntry(req.mount.uuid, doc.instanceId, async () => {
    const stored = await readAccessListEntry(req.storage, doc.instanceId);
    const checked = checkNonce(
      doc, stored, f.has('nonce') ? f.string('nonce') : undefined,
      role.disallowReauthentication || tag?.disallowReauthentication === true,
      // A tag never widens its role, also when the role was tightened after the tag was made.
      effectiveAllowInstanceMigration(role, tag),
    );
    const now = ctx.clock.now();
    const maxTtl = shortest(role.tokenMaxTtl, tagMaxTtl, req.mount.maxLeaseTtl);
    // The entry must outlive the token, so that renewals find it.
    const life = Math.max(maxTtl, role.tokenPeriod);
    await writeAccessListEntry(req.storage, doc.instanceId, {
      role: roleName,
      clientNonce: checked.nonce,
      creationTime: stored?.creationTime ?? now,
      disallowReauthentication: checked.disallow,
      pendingTime: doc.pendingTime,
      expirationTime: now + life * 1000,
      lastUpdatedTime: now,
    });
    return checked;
  });

  const identity = await readIdentityConfig(req.storage);
  const selected = selectMetadata(identity.vmMetadata, {
    account_id: doc.accountId, auth_type: 'vm', image_id: doc.imageId, instance_id: doc.instanceId, region: doc.region,
  });
  const aliasName = identity.vmAlias === 'instance_id' ? doc.instanceId : identity.vmAlias === 'image_id' ? doc.imageId : role.roleId;
  return {
    login: {
      aliasName,
      aliasMetadata: selected,
      metadata: {
        ...selected,
        role: roleName,
        role_tag_max_ttl: String(tagMaxTtl),
        ...(nonce.generated ? { nonce: nonce.nonce } : {}),
      },
      displayName: doc.instanceId,
      ...tokenParameters(role, { ...(tag?.policies !== undefined ? { policies: tagTokenPolicies(role, tag.policies) } : {}), maxTtl: tagMaxTtl }),
      internal: {
        auth_type: 'vm', role_name: roleName, role_id: role.roleId, instance_id: doc.instanceId, account_id: doc.accountId,
        region: doc.region, tag_max_ttl: tagMaxTtl,
      },
    },
  };
}
