import type { AuditBroker } from '../audit/broker';
import { BadRequestError } from '../errors';
import type { FieldData } from '../framework/fields';
import { definePath, type PathDefinition } from '../framework/types';

/** Audit options are a map of strings; the CLI and most clients send them that way anyway. */
function parseAuditOptions(f: FieldData): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(f.map('options') ?? {})) {
    if (typeof v === 'string') out[k] = v;
    else if (typeof v === 'number' || typeof v === 'boolean') out[k] = String(v);
    else throw new BadRequestError(`invalid value for "options.${k}": expected a string`);
  }
  return out;
}

/**
 * `sys/audit`, `sys/audit/:path` and `sys/audit-hash/:path`. The broker is reached through a
 * getter so the paths can be built before the broker exists (the system backend is built in
 * Core's constructor). Everything here needs sudo and the root namespace, as in Vault: the
 * devices record every namespace, and whoever controls them controls what record is kept.
 */
export function auditPaths(getBroker: () => AuditBroker): PathDefinition[] {
  return [
    definePath({
      pattern: 'audit',
      sudo: true,
      restricted: true,
      operations: {
        read: async () => {
          const data: Record<string, unknown> = {};
          for (const d of getBroker().list()) {
            data[d.path] = { type: d.type, description: d.description, options: d.options, local: d.local, path: d.path };
          }
          return { data, copyDataToTop: true };
        },
      },
    }),
    definePath({
      pattern: 'audit/(?<path>.+)',
      sudo: true,
      restricted: true,
      fields: {
        path: { type: 'string' },
        type: { type: 'lowercase-string', required: true },
        description: { type: 'string', default: '' },
        options: { type: 'map' },
        local: { type: 'bool' },
      },
      operations: {
        update: async (_req, f) => {
          const type = f.string('type').trim();
          if (type === '') throw new BadRequestError('missing required field "type"');
          await getBroker().enable(f.string('path'), type, f.string('description'), parseAuditOptions(f), f.bool('local'));
          return null;
        },
        delete: async (_req, f) => {
          await getBroker().disable(f.string('path'));
          return null;
        },
      },
    }),
    definePath({
      pattern: 'audit-hash/(?<path>.+)',
      sudo: true,
      restricted: true,
      fields: { path: { type: 'string' }, input: { type: 'string' } },
      operations: {
        update: async (_req, f) => {
          const input = f.string('input');
          if (input === '') throw new BadRequestError('missing required field "input"');
          return { data: { hash: getBroker().hash(f.string('path'), input) }, copyDataToTop: true };
        },
      },
    }),
  ];
}
