import { DescribeInstancesCommand } from '@aws-sdk/client-ec2';
import { Harness, sdkError, type Clients } from './test-support/harness';

describe('cloud1 EC2 DescribeInstances', () => {
  const h = new Harness();
  let accountId: string;
  let clients: Clients;
  let profileArn: string;

  beforeAll(async () => {
    await h.start();
  });
  afterAll(() => h.stop());
  beforeEach(() => {
    h.emulator.reset();
    const account = h.account('123456789012');
    accountId = account.accountId;
    clients = h.clients(account.root);
    profileArn = h.emulator.createRole(accountId, { roleName: 'web-role', instanceProfile: 'web-profile' }).instanceProfileArn!;
    h.emulator.createInstance({
      accountId,
      instanceId: 'i-0123456789abcdef0',
      imageId: 'ami-0abcdef1234567890',
      vpcId: 'vpc-1111',
      subnetId: 'subnet-2222',
      region: 'us-east-1',
      availabilityZone: 'us-east-1c',
      instanceType: 'm5.large',
      privateIp: '10.1.2.3',
      instanceProfileName: 'web-profile',
      tags: { Name: 'web-1', env: 'prod' },
      pendingTime: '2026-03-01T10:00:00Z',
    });
    h.emulator.createInstance({ accountId, instanceId: 'i-0fedcba9876543210', state: 'stopped', tags: { Name: 'batch' } });
  });

  it('returns the fields the auth method reads', async () => {
    const out = await clients.ec2.send(new DescribeInstancesCommand({ InstanceIds: ['i-0123456789abcdef0'] }));
    expect(out.Reservations).toHaveLength(1);
    expect(out.Reservations?.[0]?.OwnerId).toBe(accountId);
    const instance = out.Reservations?.[0]?.Instances?.[0];
    expect(instance).toMatchObject({
      InstanceId: 'i-0123456789abcdef0',
      ImageId: 'ami-0abcdef1234567890',
      State: { Code: 16, Name: 'running' },
      InstanceType: 'm5.large',
      VpcId: 'vpc-1111',
      SubnetId: 'subnet-2222',
      PrivateIpAddress: '10.1.2.3',
      Placement: { AvailabilityZone: 'us-east-1c' },
      IamInstanceProfile: { Arn: profileArn },
      LaunchTime: new Date('2026-03-01T10:00:00Z'),
    });
    expect(instance?.IamInstanceProfile?.Id).toMatch(/^AIPA/);
    expect(instance?.Tags).toEqual([
      { Key: 'Name', Value: 'web-1' },
      { Key: 'env', Value: 'prod' },
    ]);
  });

  it('reports unknown and malformed instance IDs as the provider does', async () => {
    expect(await sdkError(clients.ec2.send(new DescribeInstancesCommand({ InstanceIds: ['i-00000000000000000'] })))).toEqual({
      name: 'InvalidInstanceID.NotFound',
      status: 400,
      message: "The instance ID 'i-00000000000000000' does not exist",
    });
    expect(
      await sdkError(clients.ec2.send(new DescribeInstancesCommand({ InstanceIds: ['i-0123456789abcdef0', 'i-00000001', 'i-00000002'] }))),
    ).toMatchObject({ name: 'InvalidInstanceID.NotFound', message: "The instance IDs 'i-00000001, i-00000002' do not exist" });
    expect(await sdkError(clients.ec2.send(new DescribeInstancesCommand({ InstanceIds: ['web-1'] })))).toMatchObject({
      name: 'InvalidInstanceID.Malformed',
      status: 400,
    });
  });

  it('filters by state, tags, network, profile and ID, and pages', async () => {
    const ids = async (filters: Array<{ Name: string; Values: string[] }>) =>
      (await clients.ec2.send(new DescribeInstancesCommand({ Filters: filters }))).Reservations?.flatMap((r) => r.Instances?.map((i) => i.InstanceId)) ?? [];
    expect(await ids([{ Name: 'instance-state-name', Values: ['running'] }])).toEqual(['i-0123456789abcdef0']);
    expect(await ids([{ Name: 'tag:Name', Values: ['batch', 'nothing'] }])).toEqual(['i-0fedcba9876543210']);
    expect(await ids([{ Name: 'tag:Name', Values: ['web-*'] }, { Name: 'vpc-id', Values: ['vpc-1111'] }])).toEqual(['i-0123456789abcdef0']);
    expect(await ids([{ Name: 'iam-instance-profile.arn', Values: [profileArn] }])).toEqual(['i-0123456789abcdef0']);
    expect(await ids([{ Name: 'instance-id', Values: ['i-0fedcba9876543210'] }])).toEqual(['i-0fedcba9876543210']);
    expect(await ids([{ Name: 'owner-id', Values: ['000000000000'] }])).toEqual([]);
    expect(await sdkError(ids([{ Name: 'colour', Values: ['red'] }]))).toMatchObject({ name: 'InvalidParameterValue' });

    for (let i = 0; i < 5; i++) h.emulator.createInstance({ accountId });
    const first = await clients.ec2.send(new DescribeInstancesCommand({ MaxResults: 5 }));
    expect(first.Reservations).toHaveLength(5);
    const second = await clients.ec2.send(new DescribeInstancesCommand({ MaxResults: 5, NextToken: first.NextToken }));
    expect(second.Reservations).toHaveLength(2);
    expect(second.NextToken).toBeUndefined();
  });

  it('sees only the region the request is signed for, and follows state changes', async () => {
    h.emulator.createInstance({ accountId, instanceId: 'i-0aaaaaaaaaaaaaaaa', region: 'eu-west-1' });
    expect(await sdkError(clients.ec2.send(new DescribeInstancesCommand({ InstanceIds: ['i-0aaaaaaaaaaaaaaaa'] })))).toMatchObject({
      name: 'InvalidInstanceID.NotFound',
    });
    const eu = h.clients(h.emulator.issueRootCredentials(accountId), 'eu-west-1');
    const out = await eu.ec2.send(new DescribeInstancesCommand({ InstanceIds: ['i-0aaaaaaaaaaaaaaaa'] }));
    expect(out.Reservations?.[0]?.Instances?.[0]?.Placement?.AvailabilityZone).toBe('eu-west-1a');

    h.emulator.setInstanceState('i-0123456789abcdef0', 'stopped');
    const stopped = await clients.ec2.send(new DescribeInstancesCommand({ InstanceIds: ['i-0123456789abcdef0'] }));
    expect(stopped.Reservations?.[0]?.Instances?.[0]?.State).toEqual({ Code: 80, Name: 'stopped' });
  });
});
