export { CryptoInputError } from './errors';
export {
  HMAC_MAX_KEY_SIZE, HMAC_MIN_KEY_SIZE, KEY_TYPES,
  checkHmacKeySize, generateHmacSecret, generateKeyMaterial,
  isAeadKeyType, isAsymmetricKeyType, isEcdsaKeyType, isKeyType, isRsaKeyType,
  keyTypeFromBackupType, keyTypeInfo,
} from './key-types';
export type {
  AeadKeyType, AsymmetricKeyType, EcdsaKeyType, KeyFamily, KeyMaterial, KeyType, KeyTypeInfo, RsaKeyType,
} from './key-types';
export { AEAD_NONCE_SIZE, AEAD_TAG_SIZE, aeadDecrypt, aeadEncrypt } from './aead';
export type { AeadDecryptOptions, AeadEncryptOptions } from './aead';
export {
  KDF_BY_NUMBER, KDF_NUMBER,
  convergentNonce, deriveEd25519Key, deriveKeyBytes, ed25519PrivateKeyFromSeed,
  hkdfSha256, hmacSha256CounterKdf, kbkdfHmacSha256Counter, resolveAeadKey,
} from './kdf';
export type { AeadKey, AeadKeyParams, ConvergentVersion, CounterKdfOptions, DerivedEd25519Key, KdfName } from './kdf';
export {
  HASH_ALGORITHMS, digest, digestSize, hash, hmac, hmacVerify, isDigestAlgorithm, isHashAlgorithm, nodeDigestName,
} from './hashing';
export type { DigestAlgorithm, HashAlgorithm } from './hashing';
export { DEFAULT_SIGN_OPTIONS, decodeSignature, encodeSignature, parseSaltLength, sign, verify } from './signing';
export type { MarshalingAlgorithm, SaltLength, SignOptions, SignatureAlgorithm, SignatureHashAlgorithm } from './signing';
export {
  WRAP_HASHES, aesKeyUnwrapPad, aesKeyWrapPad, parseWrapHash, rsaOaepDecrypt, rsaOaepEncrypt, unwrapImport, wrapForImport,
} from './key-wrap';
export type { WrapHash } from './key-wrap';
export {
  checkImportedSymmetricKey, ed25519PrivateKeyFromRaw, ed25519PublicKeyFromRaw, ed25519RawPrivateKey, ed25519RawPublicKey,
  exportPrivateKey, exportPublicKey, exportSymmetricKey, formatPublicKey, keysMatch,
  parseImportedPrivateKey, parsePublicKeyPem, privateKeyFromDer,
} from './pem';
export type { ParsedPrivateKey } from './pem';
