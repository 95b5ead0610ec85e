export { Backend, requireNonEmpty } from './framework/backend';
export type { CompiledPath, PathMatch } from './framework/backend';
export { FieldData, convertField, parseFields } from './framework/fields';
export type { FieldSchema, FieldSchemas, FieldType } from './framework/fields';
export { definePath, OPERATIONS } from './framework/types';
export type {
  AuthResult, BackendRequest, BackendResponse, Caller, MountSettings, Operation, OperationHandler, PathDefinition,
  SecretResult, SecretType,
} from './framework/types';
export type { EngineContext, EngineFactory } from './framework/engine';
export { BackendHarness, expectBadRequest, expectFailure } from './framework/testing';
export * as testing from './testing';
export { formatDuration, parseDurationSeconds, requireDuration } from './framework/duration';
export { jsonTextOf, withJsonText } from './framework/json-text';
export type { JsonText, JsonTextValue } from './framework/json-text';
export { FakeClock, systemClock } from './clock';
export type { Clock, TimerHandle } from './clock';
export { createLogger, silentLogger } from './logger';
export type { Logger } from './logger';
export {
  BadRequestError, ConflictError, InternalError, NotFoundError, NotInitializedError, PayloadTooLargeError,
  PermissionDeniedError, SealedError, StandbyError, StrongroomError, UnsupportedMediaTypeError, UnsupportedOperationError,
} from './errors';
export { childrenOf } from './storage/storage';
export type { Storage, TxnOp } from './storage/storage';
export { MemoryStorage } from './storage/memory-storage';
export { PrefixedStorage, collectKeys, deleteTree, getJson, jsonOp, putJson } from './storage/logical';
export type { LogicalStorage } from './storage/logical';
export { NAMESPACE_RECORD_PREFIX } from './namespaces/namespace-registry';
export { runStorageConformance } from '@strongroom/base';
export type { ConformanceSubject } from '@strongroom/base';
export { openWithRootKey } from './seal/seal-manager';
export { combineShares } from './seal/shamir';
export type { SealConfig, SealSetup } from './seal/seal-manager';
export { AutoSealError } from './seal/auto-seal';
export type { AutoSeal } from './seal/auto-seal';
export { TransitSeal } from './seal/transit-seal';
export type { TransitSealOptions } from './seal/transit-seal';
export { Core, PERIODIC_INTERVAL_MS, SYSTEM_DEFAULT_TTL, SYSTEM_MAX_TTL, VERSION } from './core';
export type { BackgroundService, CoreExtension, CoreOptions, CoreReply, CoreRequest, HaHooks, LeaderInfo, ReplicationRoles, RequestRoute } from './core';
export type { MountConfig, MountEntry } from './mounts/mount-table';
export type { KeyScope } from './replication/key-scope';
export type { ForwardedWrite } from './replication/forwarding';
export { ACL, DEFAULT_POLICY_TEXT, parsePolicy } from './policy';
export type { Capability, Policy } from './policy';
export type { TokenEntry } from './token/token-entry';
export { CachedStorage } from './storage/cached-storage';
export type { LeaseEntry } from './expiration/lease-entry';
export { AuditBroker } from './audit/broker';
export { IdentityStore } from './identity/identity-store';
export type { Entity, EntityAlias } from './identity/identity-store';
export type { LoginRenewal, LoginRenewRequest, LoginResult } from './framework/types';
export { KeyedMutex } from './keyed-mutex';
export { checkPathName } from './path-names';
export type { DescribeChange, EngineChange, LogicalChange, LogicalOp, MountRef } from './logical-change';
export { TokenGeneration } from './system/root-generation';
export type { GenerationStatus, ShareCheck, StartOptions, TokenGenerationOptions } from './system/root-generation';
export { tokenGenerationPaths } from './system/path-generate-root';
export {
  drOperationTokenGeneration, drOperationTokenPaths, drOperationTokenSealedPaths, issueDrOperationToken, revokeDrOperationToken,
  verifyDrOperationToken,
} from './system/dr-operation-token';
export type { DrOperationTokenSetup, DrOperationTokenStore } from './system/dr-operation-token';
