import { definePath, putJson, type PathDefinition } from '@strongroom/core';
import { KEYS_CONFIG_KEY, loadKeysConfig } from './key-store';
import type { TransitContext } from './transit-context';

/** `config/keys`: mount-wide key settings; for now whether encrypt may create keys. */
export function configKeysPaths(_ctx: TransitContext): PathDefinition[] {
  return [
    definePath({
      pattern: 'config/keys',
      fields: {
        disable_upsert: { type: 'bool', description: 'Stop encrypt from creating keys that do not exist.' },
      },
      operations: {
        async read(req) {
          return { data: { ...(await loadKeysConfig(req.storage)) } };
        },
        async update(req, fields) {
          const config = await loadKeysConfig(req.storage);
          if (fields.has('disable_upsert')) config.disable_upsert = fields.bool('disable_upsert');
          await putJson(req.storage, KEYS_CONFIG_KEY, config);
          return { data: { ...config } };
        },
      },
      help: 'Mount-wide key settings: disable_upsert stops encrypt from creating missing keys.',
    }),
  ];
}
