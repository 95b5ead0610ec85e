/**
 * The checks an instance must pass for a `vm` login, for an `iam` login that infers an
 * instance, and again at renewal: it exists, it is running, and it meets every instance
 * constraint of the role.
 */
import type { Instance } from '@aws-sdk/client-ec2';
import { PermissionDeniedError, type LogicalStorage } from '@strongroom/core';
import { globMatch, parseArn } from './arn';
import type { Cloud1Context } from './context';
import type { ClientConfig } from './path-config-client';
import type { RoleEntry, VmBound } from './role';

/** What the login says about the instance (from the signed document, or the caller's ARN). */
export interface InstanceClaim {
  accountId: string;
  region: string;
  instanceId: string;
}

function check(roleName: string, instanceId: string, bound: VmBound, allowed: readonly string[], actual: string | undefined, glob = false): void {
  if (allowed.length === 0) return;
  const ok = actual !== undefined && actual !== '' && allowed.some((a) => (glob ? globMatch(a, actual) : a === actual));
  if (!ok) {
    throw new PermissionDeniedError(
      `instance ${instanceId} does not satisfy "${bound}" of role "${roleName}": ${actual ? `"${actual}"` : 'no value'} is not one of ${allowed.join(', ')}`,
    );
  }
}

/** Describes the instance (with the account's STS role when one is set) and checks it. */
export async function verifyInstance(
  ctx: Cloud1Context, storage: LogicalStorage, config: ClientConfig, roleName: string, role: RoleEntry, claim: InstanceClaim,
): Promise<Instance> {
  const instance = await ctx.provider.describeInstance(storage, config, claim.accountId, claim.region, claim.instanceId);
  if (!instance) {
    throw new PermissionDeniedError(`instance ${claim.instanceId} was not found in region ${claim.region} of account ${claim.accountId}`);
  }
  const state = instance.State?.Name ?? 'unknown';
  if (state !== 'running') throw new PermissionDeniedError(`instance ${claim.instanceId} is not running (its state is ${state})`);
  const b = role.bounds;
  const id = claim.instanceId;
  check(roleName, id, 'bound_vm_instance_id', b.bound_vm_instance_id, claim.instanceId);
  check(roleName, id, 'bound_account_id', b.bound_account_id, claim.accountId);
  check(roleName, id, 'bound_region', b.bound_region, claim.region);
  check(roleName, id, 'bound_image_id', b.bound_image_id, instance.ImageId);
  check(roleName, id, 'bound_subnet_id', b.bound_subnet_id, instance.SubnetId);
  check(roleName, id, 'bound_vpc_id', b.bound_vpc_id, instance.VpcId);
  const profileArn = instance.IamInstanceProfile?.Arn;
  check(roleName, id, 'bound_iam_instance_profile_arn', b.bound_iam_instance_profile_arn, profileArn, true);
  if (b.bound_iam_role_arn.length > 0) {
    const profile = profileArn ? parseArn(profileArn) : null;
    const roleArn = profile ? await ctx.provider.instanceProfileRoleArn(storage, config, claim.accountId, profile.name) : undefined;
    check(roleName, id, 'bound_iam_role_arn', b.bound_iam_role_arn, roleArn, true);
  }
  return instance;
}
