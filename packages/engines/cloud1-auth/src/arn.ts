/** ARNs as the provider writes them: arn:<partition>:<service>:<region>:<account>:<resource>. */
export interface Arn {
  partition: string;
  service: string;
  accountId: string;
  /** `user`, `role`, `assumed-role`, `instance-profile`, ... */
  type: string;
  /** The path between the type and the name (`/` when none), for users, roles and profiles. */
  path: string;
  /** The friendly name: a user's, a role's or a profile's name (for assumed-role, the role's). */
  name: string;
  /** For assumed-role: the session name (for an inferred instance, its ID). */
  sessionName: string;
}

export function parseArn(text: string): Arn | null {
  const parts = text.split(':');
  if (parts.length < 6 || parts[0] !== 'arn') return null;
  const [, partition = '', service = '', , accountId = ''] = parts;
  const resource = parts.slice(5).join(':');
  const slash = resource.indexOf('/');
  if (slash <= 0) return { partition, service, accountId, type: resource, path: '/', name: '', sessionName: '' };
  const type = resource.slice(0, slash);
  const rest = resource.slice(slash + 1).split('/');
  if (type === 'assumed-role') {
    if (rest.length < 2 || !rest[0] || !rest[rest.length - 1]) return null;
    return { partition, service, accountId, type, path: '/', name: rest[0], sessionName: rest.slice(1).join('/') };
  }
  const name = rest[rest.length - 1] ?? '';
  if (name === '') return null;
  const middle = rest.slice(0, -1);
  return { partition, service, accountId, type, path: middle.length ? `/${middle.join('/')}/` : '/', name, sessionName: '' };
}

/**
 * The ARN a principal is bound by: `arn:<partition>:iam::<account>:<user|role>/<name>`, with the
 * path dropped and an assumed-role session mapped to its role (the caller-identity answer of a
 * session carries neither the role's path nor a stable name for the session).
 */
export function canonicalArn(arn: Arn): string {
  const type = arn.type === 'assumed-role' ? 'role' : arn.type;
  return `arn:${arn.partition}:iam::${arn.accountId}:${type}/${arn.name}`;
}

/** Whether `value` matches `pattern`, where a trailing `*` stands for any suffix. */
export function globMatch(pattern: string, value: string): boolean {
  return pattern.endsWith('*') ? value.startsWith(pattern.slice(0, -1)) : pattern === value;
}
