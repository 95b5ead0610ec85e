export {
  ConfigError,
  DEFAULT_LISTENER_ADDRESS,
  DEFAULT_MAX_REQUEST_SIZE,
  loadConfigFile,
  parseConfig,
} from './server-config';
export type { ConfigFormat, ListenerConfig, ReplicationConfig, RetryJoinConfig, ServerConfig } from './server-config';
export type { TransitSealConfig } from './seal-config';
