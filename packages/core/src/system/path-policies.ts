import type { Core } from '../core';
import { BadRequestError, NotFoundError } from '../errors';
import { definePath, type PathDefinition } from '../framework/types';
import { normalizePolicyName } from '../policy/policy';

const ROOT_POLICY_TEXT = '';

export function policyPaths(core: Core): PathDefinition[] {
  const read = async (name: string) => {
    const normalized = normalizePolicyName(name);
    if (normalized === 'root') return ROOT_POLICY_TEXT;
    const policy = await core.policies.get(normalized);
    if (!policy) throw new NotFoundError();
    return policy.text;
  };
  return [
    // The legacy endpoints (`sys/policy`) name the document `rules`; the current ones `policy`.
    definePath({
      pattern: 'policy',
      operations: {
        read: async () => {
          const names = await core.policies.list();
          return { data: { policies: names, keys: names }, copyDataToTop: true };
        },
      },
    }),
    definePath({
      pattern: 'policy/(?<name>.+)',
      fields: { name: { type: 'string' }, rules: { type: 'string' }, policy: { type: 'string' } },
      operations: {
        read: async (_req, f) => {
          const name = normalizePolicyName(f.string('name'));
          const text = await read(name);
          return { data: { name, rules: text }, copyDataToTop: true };
        },
        update: async (_req, f) => {
          const text = f.has('rules') ? f.string('rules') : f.string('policy');
          if (!f.has('rules') && !f.has('policy')) throw new BadRequestError('missing required field "rules"');
          await core.policies.write(f.string('name'), text);
          return null;
        },
        delete: async (_req, f) => {
          await core.policies.delete(f.string('name'));
          return null;
        },
      },
    }),
    definePath({
      pattern: 'policies/acl/?',
      operations: { list: async () => ({ data: { keys: await core.policies.list() } }) },
    }),
    definePath({
      pattern: 'policies/acl/(?<name>.+)',
      fields: { name: { type: 'string' }, policy: { type: 'string', required: true } },
      operations: {
        read: async (_req, f) => {
          const name = normalizePolicyName(f.string('name'));
          return { data: { name, policy: await read(name) } };
        },
        update: async (_req, f) => {
          await core.policies.write(f.string('name'), f.string('policy'));
          return null;
        },
        delete: async (_req, f) => {
          await core.policies.delete(f.string('name'));
          return null;
        },
      },
    }),
  ];
}
