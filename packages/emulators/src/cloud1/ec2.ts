/**
 * EC2 (ec2Query, version 2016-11-15): DescribeInstances, the one call the auth method makes to
 * check an instance. EC2 is regional: a caller sees the instances of its own account in the
 * region named by the request's credential scope, exactly like the provider, so an auth method
 * that signs for the wrong region gets InvalidInstanceID.NotFound here too.
 */
import { randomBytes } from 'node:crypto';
import { Cloud1Error, validationError } from './errors';
import * as ids from './ids';
import { ec2Filters, ec2List, optional, optionalInt } from './query';
import type { ActionHandler, CallContext } from './service';
import { INSTANCE_STATE_CODES, type Cloud1State, type Instance, type InstanceStateName, type Tag } from './state';
import type { XmlObject } from './xml';

const INSTANCE_ID_PATTERN = /^i-([0-9a-f]{8}|[0-9a-f]{17})$/;

export interface InstanceSeed {
  /** `i-` and 8 or 17 hex digits; generated when absent. */
  instanceId?: string;
  accountId: string;
  region?: string;
  /** Defaults to the region with `a` appended. */
  availabilityZone?: string;
  state?: InstanceStateName;
  imageId?: string;
  instanceType?: string;
  architecture?: string;
  vpcId?: string;
  subnetId?: string;
  privateIp?: string;
  /** An instance profile of the same account; its role backs the metadata service's credentials. */
  instanceProfileName?: string;
  tags?: Record<string, string>;
  /** ISO 8601 or epoch milliseconds; defaults to now. */
  pendingTime?: string | number;
}

const hex = (bytes: number): string => randomBytes(bytes).toString('hex');

export function createInstance(state: Cloud1State, seed: InstanceSeed): Instance {
  const account = state.account(seed.accountId);
  const instanceId = seed.instanceId ?? ids.instanceId();
  if (!INSTANCE_ID_PATTERN.test(instanceId)) {
    throw validationError(`Invalid id: "${instanceId}" (expecting "i-..." with 8 or 17 hex digits)`);
  }
  if (state.instances.has(instanceId)) throw validationError(`Instance ${instanceId} already exists`);
  const stateName = seed.state ?? 'running';
  if (!(stateName in INSTANCE_STATE_CODES)) throw validationError(`Invalid instance state ${stateName}`);
  if (seed.instanceProfileName !== undefined) state.instanceProfile(account, seed.instanceProfileName);
  const region = seed.region ?? 'us-east-1';
  const pendingTime =
    seed.pendingTime === undefined ? state.now() : typeof seed.pendingTime === 'number' ? seed.pendingTime : Date.parse(seed.pendingTime);
  if (Number.isNaN(pendingTime)) throw validationError(`Invalid pendingTime ${String(seed.pendingTime)}`);
  const instance: Instance = {
    instanceId,
    accountId: account.id,
    reservationId: ids.reservationId(),
    region,
    availabilityZone: seed.availabilityZone ?? `${region}a`,
    state: stateName,
    imageId: seed.imageId ?? `ami-${hex(9).slice(0, 17)}`,
    instanceType: seed.instanceType ?? 't3.micro',
    architecture: seed.architecture ?? 'x86_64',
    vpcId: seed.vpcId ?? `vpc-${hex(9).slice(0, 17)}`,
    subnetId: seed.subnetId ?? `subnet-${hex(9).slice(0, 17)}`,
    privateIp: seed.privateIp ?? `10.0.${randomBytes(1)[0] ?? 0}.${1 + ((randomBytes(1)[0] ?? 0) % 254)}`,
    instanceProfileName: seed.instanceProfileName,
    tags: Object.entries(seed.tags ?? {}).map(([key, value]): Tag => ({ key, value })),
    pendingTime: Math.floor(pendingTime / 1000) * 1000,
  };
  state.instances.set(instanceId, instance);
  return instance;
}

/** The provider's instance profile ARN for an instance, if it has a profile. */
export function instanceProfileOf(state: Cloud1State, instance: Instance) {
  if (instance.instanceProfileName === undefined) return undefined;
  return state.accounts.get(instance.accountId)?.instanceProfiles.get(instance.instanceProfileName.toLowerCase());
}

/** The provider's private DNS name scheme (also the metadata service's hostname). */
export function privateDnsName(instance: Instance): string {
  const domain = instance.region === 'us-east-1' ? 'ec2.internal' : `${instance.region}.compute.internal`;
  return `ip-${instance.privateIp.replace(/\./g, '-')}.${domain}`;
}

function instanceXml(state: Cloud1State, instance: Instance): XmlObject {
  const profile = instanceProfileOf(state, instance);
  return {
    instanceId: instance.instanceId,
    imageId: instance.imageId,
    instanceState: { code: INSTANCE_STATE_CODES[instance.state], name: instance.state },
    privateDnsName: privateDnsName(instance),
    dnsName: '',
    reason: '',
    amiLaunchIndex: 0,
    instanceType: instance.instanceType,
    launchTime: new Date(instance.pendingTime).toISOString(),
    placement: { availabilityZone: instance.availabilityZone, groupName: '', tenancy: 'default' },
    monitoring: { state: 'disabled' },
    subnetId: instance.subnetId,
    vpcId: instance.vpcId,
    privateIpAddress: instance.privateIp,
    sourceDestCheck: true,
    architecture: instance.architecture,
    rootDeviceType: 'ebs',
    rootDeviceName: '/dev/xvda',
    virtualizationType: 'hvm',
    tagSet: instance.tags.length === 0 ? undefined : instance.tags.map((t) => ({ key: t.key, value: t.value })),
    hypervisor: 'xen',
    iamInstanceProfile: profile ? { arn: profile.arn, id: profile.instanceProfileId } : undefined,
    ebsOptimized: false,
    enaSupport: true,
  };
}

type FilterReader = (state: Cloud1State, instance: Instance) => string[];

/** The DescribeInstances filters the emulator understands, plus `tag:<key>`. */
const FILTERS: Record<string, FilterReader> = {
  'instance-id': (_s, i) => [i.instanceId],
  'instance-state-name': (_s, i) => [i.state],
  'instance-state-code': (_s, i) => [String(INSTANCE_STATE_CODES[i.state])],
  'image-id': (_s, i) => [i.imageId],
  'instance-type': (_s, i) => [i.instanceType],
  'vpc-id': (_s, i) => [i.vpcId],
  'subnet-id': (_s, i) => [i.subnetId],
  'availability-zone': (_s, i) => [i.availabilityZone],
  'private-ip-address': (_s, i) => [i.privateIp],
  'owner-id': (_s, i) => [i.accountId],
  'reservation-id': (_s, i) => [i.reservationId],
  'iam-instance-profile.arn': (s, i) => {
    const profile = instanceProfileOf(s, i);
    return profile ? [profile.arn] : [];
  },
  'tag-key': (_s, i) => i.tags.map((t) => t.key),
};

function filterReader(name: string): FilterReader | undefined {
  if (name.startsWith('tag:')) {
    const key = name.slice(4);
    return (_s, i) => i.tags.filter((t) => t.key === key).map((t) => t.value);
  }
  return FILTERS[name];
}

function wildcard(pattern: string, value: string): boolean {
  const regex = new RegExp('^' + pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.') + '$');
  return regex.test(value);
}

function describeInstances(ctx: CallContext): XmlObject {
  const requested = ec2List(ctx.params, 'InstanceId');
  const maxResults = optionalInt(ctx.params, 'MaxResults');
  if (maxResults !== undefined && requested.length > 0) {
    throw new Cloud1Error('InvalidParameterCombination', 400, 'The parameter instancesSet cannot be used with the parameter maxResults');
  }
  if (maxResults !== undefined && (maxResults < 5 || maxResults > 1000)) {
    throw new Cloud1Error(
      'InvalidParameterValue',
      400,
      `Value ( ${maxResults} ) for parameter maxResults is invalid. Expecting a value greater than 5.`,
    );
  }
  for (const id of requested) {
    if (!INSTANCE_ID_PATTERN.test(id)) throw new Cloud1Error('InvalidInstanceID.Malformed', 400, `Invalid id: "${id}"`);
  }
  const visible = [...ctx.state.instances.values()].filter((i) => i.accountId === ctx.account.id && i.region === ctx.region);
  if (requested.length > 0) {
    const missing = requested.filter((id) => !visible.some((i) => i.instanceId === id));
    if (missing.length === 1) {
      throw new Cloud1Error('InvalidInstanceID.NotFound', 400, `The instance ID '${missing[0] ?? ''}' does not exist`);
    }
    if (missing.length > 1) {
      throw new Cloud1Error('InvalidInstanceID.NotFound', 400, `The instance IDs '${missing.join(', ')}' do not exist`);
    }
  }
  const filters = ec2Filters(ctx.params);
  let matched = visible.filter((instance) => requested.length === 0 || requested.includes(instance.instanceId));
  for (const filter of filters) {
    const read = filterReader(filter.name);
    if (!read) throw new Cloud1Error('InvalidParameterValue', 400, `The filter '${filter.name}' is invalid`);
    matched = matched.filter((instance) => {
      const values = read(ctx.state, instance);
      return filter.values.some((pattern) => values.some((v) => wildcard(pattern, v)));
    });
  }
  const start = Number(optional(ctx.params, 'NextToken') ?? '0');
  const pageSize = maxResults ?? matched.length;
  const slice = matched.slice(start, start + pageSize);
  const nextToken = start + pageSize < matched.length ? String(start + pageSize) : undefined;
  return {
    reservationSet: slice.map((instance) => ({
      reservationId: instance.reservationId,
      ownerId: instance.accountId,
      groupSet: undefined,
      instancesSet: [instanceXml(ctx.state, instance)],
    })),
    nextToken,
  };
}

export const EC2_ACTIONS: ReadonlyMap<string, ActionHandler> = new Map([['DescribeInstances', describeInstances]]);
