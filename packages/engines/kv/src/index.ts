export { KvBackend, createKvBackend, kvEngine } from './kv-engine';
export { mergePatch } from './merge-patch';
export { DEFAULT_MAX_VERSIONS, formatTime, loadMetadata, loadVersionData } from './secret-store';
export type { KvConfig, KvContext, SecretMetadata, VersionRecord } from './secret-store';
export { describeKvChange } from './describe-change';
export type { KvSecretChange } from './describe-change';
