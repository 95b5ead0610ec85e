export { createApp } from './app';
export type { AppOptions } from './app';
export { createDispatcher } from './dispatcher';
export { startServer, ENGINES } from './server';
export type { RunningServer } from './server';
export { startDevServer, parseListen } from './dev';
export type { DevOptions, DevServer } from './dev';
export { ConfigError, loadConfigFile, parseConfig } from './config';
export type { ListenerConfig, ServerConfig } from './config';
