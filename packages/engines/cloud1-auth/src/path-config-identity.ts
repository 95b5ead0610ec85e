import { BadRequestError, definePath, getJson, putJson, type FieldData, type LogicalStorage, type PathDefinition } from '@strongroom/core';
import type { Cloud1Context } from './context';
import { KEYS } from './storage-keys';

/** Which value names a login's identity alias, and which fields go into token and alias metadata. */
export interface IdentityConfig {
  iamAlias: 'role_id' | 'unique_id' | 'full_arn';
  iamMetadata: string[];
  vmAlias: 'role_id' | 'instance_id' | 'image_id';
  vmMetadata: string[];
}

const DEFAULT_METADATA = ['account_id', 'auth_type'];
const IAM_METADATA = [...DEFAULT_METADATA, 'canonical_arn', 'client_arn', 'client_user_id', 'inferred_cloud1_region', 'inferred_entity_id', 'inferred_entity_type'];
const VM_METADATA = [...DEFAULT_METADATA, 'image_id', 'instance_id', 'region'];

export const DEFAULT_IDENTITY_CONFIG: IdentityConfig = {
  iamAlias: 'role_id', iamMetadata: DEFAULT_METADATA, vmAlias: 'role_id', vmMetadata: DEFAULT_METADATA,
};

export async function readIdentityConfig(storage: LogicalStorage): Promise<IdentityConfig> {
  return { ...DEFAULT_IDENTITY_CONFIG, ...((await getJson<Partial<IdentityConfig>>(storage, KEYS.identityConfig)) ?? {}) };
}

/**
 * A metadata selection: a list or a comma string; empty means none, `default` stands for the
 * default fields (alone it restores them), anything else must be a selectable field.
 */
function metadataSelection(field: string, raw: unknown, allowed: readonly string[]): string[] {
  const items = Array.isArray(raw) ? raw : typeof raw === 'string' ? raw.split(',') : null;
  if (!items || items.some((i) => typeof i !== 'string')) throw new BadRequestError(`invalid value for "${field}": expected a list of field names`);
  const names = (items as string[]).map((i) => i.trim()).filter((i) => i !== '');
  const out = new Set<string>();
  for (const name of names) {
    if (name === 'default') DEFAULT_METADATA.forEach((d) => out.add(d));
    else if (allowed.includes(name)) out.add(name);
    else throw new BadRequestError(`invalid value for "${field}": "${name}" is not one of default, ${allowed.join(', ')}`);
  }
  return [...out];
}

function apply(current: IdentityConfig, f: FieldData): IdentityConfig {
  const next = { ...current };
  if (f.has('iam_alias')) next.iamAlias = f.string('iam_alias') as IdentityConfig['iamAlias'];
  if (f.has('vm_alias')) next.vmAlias = f.string('vm_alias') as IdentityConfig['vmAlias'];
  if (f.has('iam_metadata')) next.iamMetadata = metadataSelection('iam_metadata', f.get('iam_metadata'), IAM_METADATA);
  if (f.has('vm_metadata')) next.vmMetadata = metadataSelection('vm_metadata', f.get('vm_metadata'), VM_METADATA);
  return next;
}

export function configIdentityPaths(_ctx: Cloud1Context): PathDefinition[] {
  return [
    definePath({
      pattern: 'config/identity',
      fields: {
        iam_alias: { type: 'string', default: 'role_id', allowed: ['role_id', 'unique_id', 'full_arn'] },
        iam_metadata: { type: 'any', default: ['default'] },
        vm_alias: { type: 'string', default: 'role_id', allowed: ['role_id', 'instance_id', 'image_id'] },
        vm_metadata: { type: 'any', default: ['default'] },
      },
      operations: {
        read: async (req) => {
          const c = await readIdentityConfig(req.storage);
          return { data: { iam_alias: c.iamAlias, iam_metadata: c.iamMetadata, vm_alias: c.vmAlias, vm_metadata: c.vmMetadata } };
        },
        update: async (req, f) => {
          await putJson(req.storage, KEYS.identityConfig, apply(await readIdentityConfig(req.storage), f));
          return null;
        },
      },
      help: 'How logins map to identity aliases, and which fields go into token metadata.',
    }),
  ];
}
