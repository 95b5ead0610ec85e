export { createLogger, silentLogger } from '@strongroom/base';
export type { Logger } from '@strongroom/base';
