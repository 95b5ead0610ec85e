export { AUDIT_TABLE_KEY, AuditBroker } from './broker';
export type { AuditBrokerOptions } from './broker';
export { fileAuditDevice } from './file-device';
export { HASH_PREFIX, hashStrings, hmacOf } from './format';
export { auditAuthOf, auditErrorOf, auditResponseOf, auditWrapInfoOf } from './from-core';
export type { AuditResponseExtras } from './from-core';
export type {
  AuditAuth, AuditDevice, AuditDeviceConfig, AuditDeviceFactory, AuditDeviceInfo, AuditRequest, AuditRequestInput, AuditResponse,
  AuditResponseInput, AuditWrapInfo,
} from './types';
