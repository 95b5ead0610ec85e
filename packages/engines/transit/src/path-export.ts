import { BadRequestError, definePath, type PathDefinition } from '@strongroom/core';
import { exportPrivateKey, exportPublicKey, exportSymmetricKey, isAsymmetricKeyType } from './crypto';
import type { KeyPolicy, KeyVersion } from './key-policy';
import { KEY_NAME, type TransitContext } from './transit-context';

export const EXPORT_TYPES = ['encryption-key', 'signing-key', 'hmac-key', 'public-key', 'certificate-chain'] as const;
export type ExportType = (typeof EXPORT_TYPES)[number];

/**
 * The versions a `version` path segment or field names: empty is every version still usable
 * for decryption, `latest` the current one, otherwise a number (Vault also takes `v3`).
 */
export function selectVersions(policy: KeyPolicy, selector: string, field = 'version'): KeyVersion[] {
  const text = selector.trim();
  if (text === '') return policy.visibleVersions();
  return [selectVersion(policy, text, field)];
}

/** One version: empty or `latest` is the current one. */
export function selectVersion(policy: KeyPolicy, selector: string, field = 'version'): KeyVersion {
  const text = selector.trim();
  let n: number;
  if (text === '' || text === 'latest') {
    n = policy.latestVersion;
  } else {
    if (!/^v?\d{1,9}$/.test(text)) throw new BadRequestError(`invalid value for "${field}": "${selector}" is not a key version; use a number or "latest"`);
    n = Number(text.replace(/^v/, ''));
  }
  if (n < Math.max(1, policy.minDecryptionVersion)) {
    throw new BadRequestError(`invalid value for "${field}": version ${n} is below the key's min_decryption_version ${policy.minDecryptionVersion}`);
  }
  const version = policy.version(n);
  if (!version) throw new BadRequestError(`invalid value for "${field}": key "${policy.name}" has no version ${n}`);
  return version;
}

function isExportType(value: string): value is ExportType {
  return (EXPORT_TYPES as readonly string[]).includes(value);
}

/** Refuses an export type the key's type cannot answer. */
function checkExportable(policy: KeyPolicy, exportType: ExportType): void {
  const spec = policy.spec;
  const refuse = (why: string): never => {
    throw new BadRequestError(`invalid value for "type": ${why}`);
  };
  switch (exportType) {
    case 'encryption-key':
      if (!spec.supportsEncryption) refuse(`encryption-key export needs a key that supports encryption; "${policy.name}" is of type ${policy.type}`);
      break;
    case 'signing-key':
      if (!spec.supportsSigning) refuse(`signing-key export needs a key that supports signing; "${policy.name}" is of type ${policy.type}`);
      break;
    case 'public-key':
      if (!isAsymmetricKeyType(policy.type)) refuse(`public-key export needs an asymmetric key; "${policy.name}" is of type ${policy.type}`);
      break;
    case 'certificate-chain':
      if (!spec.supportsSigning) refuse(`certificate chains are kept only for signing keys; "${policy.name}" is of type ${policy.type}`);
      break;
    case 'hmac-key':
      break;
  }
}

/** The exported text of one version; a version imported as a public key alone exports "" as private key. */
function exportValue(policy: KeyPolicy, v: KeyVersion, exportType: ExportType): string | undefined {
  const type = policy.type;
  switch (exportType) {
    case 'hmac-key':
      return exportSymmetricKey(v.hmacKey);
    case 'encryption-key':
    case 'signing-key':
      if (isAsymmetricKeyType(type)) return v.hasPrivateKey() ? exportPrivateKey(type, v.privateKey()) : '';
      return v.key ? exportSymmetricKey(v.key) : '';
    case 'public-key':
      return isAsymmetricKeyType(type) ? exportPublicKey(type, v.publicKey()) : '';
    case 'certificate-chain':
      return v.certificateChain;
  }
}

/** `export/:type/:name(/:version)`: key material in the formats Vault uses. */
export function exportPaths(ctx: TransitContext): PathDefinition[] {
  return [
    definePath({
      pattern: `export/(?<type>[^/]+)/${KEY_NAME}(?:/(?<version>[^/]+))?`,
      fields: {
        type: { type: 'string', description: 'encryption-key, signing-key, hmac-key, public-key or certificate-chain.' },
        name: { type: 'string', description: 'Name of the key.' },
        version: { type: 'string', default: '', description: 'Version to export: a number or "latest"; empty exports every version.' },
      },
      operations: {
        async read(req, fields) {
          const exportType = fields.string('type');
          if (!isExportType(exportType)) {
            throw new BadRequestError(`invalid export type: ${exportType}; use one of ${EXPORT_TYPES.join(', ')}`);
          }
          const policy = await ctx.keys.get(req.storage, fields.string('name'));
          if (!policy) return null;
          // Public parts need no permission to leave; everything else needs exportable. The
          // message is Vault's: clients and runbooks match on it.
          if (!policy.exportable && exportType !== 'public-key' && exportType !== 'certificate-chain') {
            throw new BadRequestError('private key material is not exportable');
          }
          checkExportable(policy, exportType);
          const selector = fields.string('version');
          const keys: Record<string, string> = {};
          for (const v of selectVersions(policy, selector)) {
            const value = exportValue(policy, v, exportType);
            if (value !== undefined) keys[String(v.version)] = value;
          }
          if (exportType === 'certificate-chain' && Object.keys(keys).length === 0) {
            const which = selector.trim() === '' ? 'no version' : `version ${selectVersion(policy, selector).version}`;
            throw new BadRequestError(`${which} of key "${policy.name}" has a certificate chain; set one through keys/${policy.name}/set-certificate`);
          }
          return { data: { name: policy.name, type: policy.type, keys } };
        },
      },
      help: 'Exports key material of an exportable key (public keys and certificate chains of any key).',
    }),
  ];
}
