import type { Core } from '../core';
import { BadRequestError, NotFoundError } from '../errors';
import { definePath, type BackendRequest, type PathDefinition } from '../framework/types';
import { normalizePolicyName } from '../policy/policy';

const ROOT_POLICY_TEXT = '';

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/**
 * The policy text of a write. Vault lets clients send it base64-encoded to spare them the
 * escaping; neither HCL nor JSON policies can look like base64, so decoding is unambiguous.
 * An empty text is refused, as Vault does.
 */
function policyText(raw: string, field: string): string {
  const text = raw.trim();
  if (text === '') throw new BadRequestError(`missing required field "${field}": the policy text must not be empty`);
  if (BASE64.test(text) && text.length % 4 === 0) {
    const decoded = Buffer.from(text, 'base64').toString('utf8');
    if (decoded.trim() === '') throw new BadRequestError(`invalid value for "${field}": the policy text must not be empty`);
    return decoded;
  }
  return raw;
}

export function policyPaths(core: Core): PathDefinition[] {
  const read = async (req: BackendRequest, name: string) => {
    const normalized = normalizePolicyName(name);
    if (normalized === 'root') return ROOT_POLICY_TEXT;
    const policy = await core.viewOf(req).policies.get(normalized);
    if (!policy) throw new NotFoundError();
    return policy.text;
  };
  return [
    // The legacy endpoints (`sys/policy`) name the document `rules`; the current ones `policy`.
    definePath({
      pattern: 'policy/?',
      operations: {
        read: async (req) => {
          const names = await core.viewOf(req).policies.list();
          return { data: { policies: names, keys: names }, copyDataToTop: true };
        },
        list: async (req) => {
          const names = await core.viewOf(req).policies.list();
          return { data: { policies: names, keys: names } };
        },
      },
    }),
    definePath({
      pattern: 'policy/(?<name>.+)',
      fields: { name: { type: 'string' }, rules: { type: 'string' }, policy: { type: 'string' } },
      operations: {
        read: async (req, f) => {
          const name = normalizePolicyName(f.string('name'));
          const text = await read(req, name);
          return { data: { name, rules: text }, copyDataToTop: true };
        },
        update: async (req, f) => {
          if (!f.has('rules') && !f.has('policy')) throw new BadRequestError('missing required field "rules"');
          // Vault takes `policy` when both are sent; `rules` is the older name.
          const field = f.string('policy') !== '' ? 'policy' : 'rules';
          await core.viewOf(req).policies.write(f.string('name'), policyText(f.string(field), field));
          return null;
        },
        delete: async (req, f) => {
          await core.viewOf(req).policies.delete(f.string('name'));
          return null;
        },
      },
    }),
    definePath({
      pattern: 'policies/acl/?',
      operations: { list: async (req) => ({ data: { keys: await core.viewOf(req).policies.list() } }) },
    }),
    definePath({
      pattern: 'policies/acl/(?<name>.+)',
      fields: { name: { type: 'string' }, policy: { type: 'string', required: true } },
      operations: {
        read: async (req, f) => {
          const name = normalizePolicyName(f.string('name'));
          return { data: { name, policy: await read(req, name) } };
        },
        update: async (req, f) => {
          await core.viewOf(req).policies.write(f.string('name'), policyText(f.string('policy'), 'policy'));
          return null;
        },
        delete: async (req, f) => {
          await core.viewOf(req).policies.delete(f.string('name'));
          return null;
        },
      },
    }),
  ];
}
