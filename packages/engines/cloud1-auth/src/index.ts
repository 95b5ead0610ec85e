export { Cloud1AuthBackend, cloud1AuthEngine, cloud1AuthEngineWith, createCloud1AuthBackend } from './cloud1-auth-engine';
export type { Cloud1AuthOptions } from './context';
