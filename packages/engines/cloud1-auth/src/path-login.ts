import { BadRequestError, definePath, type PathDefinition } from '@strongroom/core';
import type { Cloud1Context } from './context';
import { loginIam } from './login-iam';
import { loginVm } from './login-vm';

const VM_FIELDS = ['pkcs7', 'identity', 'signature'] as const;
const IAM_FIELDS = ['iam_http_request_method', 'iam_request_url', 'iam_request_body', 'iam_request_headers'] as const;

export function loginPaths(ctx: Cloud1Context): PathDefinition[] {
  return [
    definePath({
      pattern: 'login',
      unauthenticated: true,
      fields: {
        role: { type: 'string', default: '' },
        identity: { type: 'string', default: '' },
        signature: { type: 'string', default: '' },
        pkcs7: { type: 'string', default: '' },
        nonce: { type: 'string' },
        iam_http_request_method: { type: 'string', default: '' },
        iam_request_url: { type: 'string', default: '' },
        iam_request_body: { type: 'string', default: '' },
        iam_request_headers: { type: 'any' },
      },
      operations: {
        update: async (req, f) => {
          // The login type follows from the proof given; a mix of both is refused.
          const vm = VM_FIELDS.some((n) => f.has(n));
          const iam = IAM_FIELDS.some((n) => f.has(n));
          if (vm && iam) {
            throw new BadRequestError('invalid value for "pkcs7": give the fields of a vm login (pkcs7, or identity and signature) or of an iam login (iam_*), not both');
          }
          if (vm) return loginVm(ctx, req, f);
          if (iam) {
            if (f.has('nonce')) throw new BadRequestError('invalid value for "nonce": only vm logins take a nonce');
            return loginIam(ctx, req, f);
          }
          throw new BadRequestError(
            'missing required field "pkcs7": a vm login needs "pkcs7" (or "identity" and "signature"); an iam login needs "iam_http_request_method", "iam_request_url", "iam_request_body" and "iam_request_headers"',
          );
        },
      },
      help: 'Logs in with a signed instance identity document (vm) or a signed GetCallerIdentity request (iam).',
    }),
  ];
}
