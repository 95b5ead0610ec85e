import { BadRequestError, definePath, getJson, putJson, type PathDefinition } from '@strongroom/core';
import { parseArn } from './arn';
import type { Cloud1Context } from './context';
import { KEYS } from './storage-keys';

export function configStsPaths(_ctx: Cloud1Context): PathDefinition[] {
  return [
    definePath({
      pattern: 'config/sts/?',
      operations: { list: async (req) => ({ data: { keys: await req.storage.list(KEYS.stsPrefix) } }) },
      help: 'Lists the account IDs with an STS role.',
    }),
    definePath({
      pattern: 'config/sts/(?<account_id>[^/]+)',
      fields: {
        account_id: { type: 'string', required: true },
        sts_role: { type: 'string', required: true, description: 'ARN of the role to assume for instances of this account' },
      },
      existenceCheck: async (req, f) => (await req.storage.get(KEYS.stsPrefix + f.string('account_id'))) !== null,
      operations: {
        read: async (req, f) => {
          const stored = await getJson<{ stsRole: string }>(req.storage, KEYS.stsPrefix + f.string('account_id'));
          return stored ? { data: { sts_role: stored.stsRole } } : null;
        },
        create: async (req, f) => {
          const accountId = f.string('account_id');
          if (!/^\d{12}$/.test(accountId)) throw new BadRequestError('invalid value for "account_id": expected a 12-digit account ID');
          const role = f.string('sts_role');
          const arn = parseArn(role);
          if (!arn || arn.service !== 'iam' || arn.type !== 'role') {
            throw new BadRequestError(`invalid value for "sts_role": "${role}" is not the ARN of an IAM role`);
          }
          await putJson(req.storage, KEYS.stsPrefix + accountId, { stsRole: role });
          return null;
        },
        delete: async (req, f) => {
          await req.storage.delete(KEYS.stsPrefix + f.string('account_id'));
          return null;
        },
      },
      help: 'The STS role assumed to verify instances of a satellite account.',
    }),
  ];
}
