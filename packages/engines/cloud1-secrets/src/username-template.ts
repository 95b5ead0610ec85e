/**
 * Names of what the engine creates at the provider (IAM users, federated users, role sessions),
 * made by config/root's `username_template`. The template sees `.Type` ("IAM" or "STS"),
 * `.DisplayName` (the caller's token display name) and `.PolicyName` (the role name), and must
 * handle both types: IAM names may have 64 characters, STS names 32. A longer result is a 500
 * naming the limit, as the spec says: it is the operator's template that is wrong, not the request.
 */
import { BadRequestError, StrongroomError } from '@strongroom/core';
import { parseTemplate, TemplateError, type Template, type TemplateEnvironment } from './template';

export type UsernameType = 'IAM' | 'STS';

export const USERNAME_LIMITS: Readonly<Record<UsernameType, number>> = { IAM: 64, STS: 32 };

export const USERNAME_FIELDS = ['Type', 'DisplayName', 'PolicyName'] as const;

/**
 * The template used when config/root sets none. Its names keep the shape Vault's default
 * produces (`vault-<display>-<role>-<unix time>-<random>`), so IAM policies that operators wrote
 * to let the engine manage `user/vault-*` keep working after a move to Strongroom.
 */
export const DEFAULT_USERNAME_TEMPLATE =
  '{{ if (eq .Type "STS") }}'
  + '{{ printf "vault-%s-%s" (unix_time) (random 20) | truncate 32 }}'
  + '{{ else }}'
  + '{{ printf "vault-%s-%s-%s" (printf "%s-%s" .DisplayName .PolicyName | truncate 42) (unix_time) (random 20) | truncate 64 }}'
  + '{{ end }}';

/** A generated name over the provider's limit: the template's fault, answered with 500 and the limit. */
export class UsernameTooLongError extends StrongroomError {
  constructor(type: UsernameType, length: number) {
    super(
      'username_too_long', 500,
      `the username made by username_template has ${length} characters, over the ${type} username limit of `
      + `${USERNAME_LIMITS[type]} characters; change config/root's username_template (it must handle both .Type "IAM" and "STS")`,
    );
  }
}

/** A template that parsed at configuration but fails when run (say, `truncate -1` inside an `if`). */
export class UsernameTemplateError extends StrongroomError {
  constructor(message: string, cause: unknown) {
    super('username_template', 500, `username_template failed: ${message}`, { cause });
  }
}

/** Checks a template at configuration: it must parse and run for both types. */
export function checkUsernameTemplate(text: string, env: TemplateEnvironment): void {
  let template: Template;
  try {
    template = parseTemplate(text, USERNAME_FIELDS);
    for (const type of ['IAM', 'STS'] as const) template.render({ Type: type, DisplayName: 'token', PolicyName: 'role' }, env);
  } catch (err) {
    if (err instanceof TemplateError) throw new BadRequestError(`invalid value for "username_template": ${err.message}`);
    throw err;
  }
}

/** Characters IAM and STS accept in names; anything else in a display or role name becomes `_`. */
export function sanitizeName(name: string): string {
  return name.replace(/[^\w+=,.@-]/g, '_');
}

/** A name for a new IAM user, federated user or role session. */
export function generateUsername(
  templateText: string, type: UsernameType, displayName: string, policyName: string, env: TemplateEnvironment,
): string {
  let name: string;
  try {
    name = parseTemplate(templateText || DEFAULT_USERNAME_TEMPLATE, USERNAME_FIELDS)
      .render({ Type: type, DisplayName: sanitizeName(displayName), PolicyName: sanitizeName(policyName) }, env);
  } catch (err) {
    if (err instanceof TemplateError) throw new UsernameTemplateError(err.message, err);
    throw err;
  }
  if (name.length > USERNAME_LIMITS[type]) throw new UsernameTooLongError(type, name.length);
  return name;
}
