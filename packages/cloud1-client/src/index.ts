export { checkEndpointUrl, checkMaxRetries, credentialChain, MAX_PROVIDER_RETRIES } from './credential-chain';
export type { Cloud1Credentials, CredentialProvider } from './credential-chain';
export { ProviderError } from './provider-error';
