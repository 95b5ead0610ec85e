export { Cloud1Emulator } from './cloud1/emulator';
export type { Cloud1Clock, Cloud1StartOptions } from './cloud1/emulator';
export type {
  AccountSeed,
  Cloud1Endpoints,
  Credentials,
  InstanceInfo,
  MfaDeviceInfo,
  MfaDeviceSeed,
  RoleInfo,
  RoleSeed,
  SeedDocument,
  SeedResult,
  UserInfo,
  UserSeed,
} from './cloud1/admin';
export type { InstanceSeed } from './cloud1/ec2';
export type { InstanceStateName } from './cloud1/state';
export type { SecretsManagerSecretView } from './cloud1/secrets-manager';
export { totpCode } from './cloud1/totp';
export { Cloud1EmulatorFixture, nextAccountId } from './cloud1/test-fixture';
export { Cloud3StorageEmulator } from './cloud3/emulator';
export type { Cloud3StartOptions } from './cloud3/emulator';
export { RepohostEmulator } from './repohost/emulator';
export type { RepohostStartOptions, RepohostTokenOptions } from './repohost/emulator';
export type { RepositoryView, SecretView } from './repohost/store';
export { DeployhostProjectEmulator } from './deployhost-project/emulator';
export type { DeployhostStartOptions, DeployhostToken } from './deployhost-project/emulator';
export type { EnvVar as DeployhostEnvVar, Project as DeployhostProject } from './deployhost-project/store';
export { Cloud2KeyVaultEmulator } from './cloud2-kv/emulator';
export type { Cloud2KvStartOptions, Cloud2SecretView } from './cloud2-kv/emulator';
export type { Cloud2Client, SecretPermission as Cloud2SecretPermission } from './cloud2-kv/identity';
export { Cloud3SecretManagerEmulator } from './cloud3-sm/emulator';
export type { Cloud3SecretView, Cloud3SmStartOptions } from './cloud3-sm/emulator';
export type { ServiceAccountCredentials as Cloud3ServiceAccountCredentials } from './cloud3-sm/auth';
