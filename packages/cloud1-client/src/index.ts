export { checkEndpointUrl, credentialChain } from './credential-chain';
export type { Cloud1Credentials, CredentialProvider } from './credential-chain';
export { ProviderError } from './provider-error';
