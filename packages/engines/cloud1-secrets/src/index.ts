export { Cloud1SecretsBackend, cloud1SecretsEngine, cloud1SecretsEngineWith, createCloud1SecretsBackend } from './cloud1-secrets-engine';
export type { Cloud1SecretsOptions } from './context';
