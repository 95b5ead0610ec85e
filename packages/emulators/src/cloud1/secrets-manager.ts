/**
 * Secrets Manager: the secrets of every account and region, and the operations the provider's
 * JSON API offers on them. Handlers take the already-verified caller and the parsed JSON body
 * and return the response object; problems are thrown as `Cloud1Error`s carrying the
 * provider's exception names, which the SDK turns into `error.name`.
 *
 * What the provider checks is checked here too: name characters and length, value and
 * description sizes, tag limits, one of SecretString/SecretBinary, versions that cannot be
 * rewritten under the same ClientRequestToken (the idempotency a syncing client relies on),
 * and secrets scheduled for deletion refusing reads and writes until restored or purged.
 */
import { randomInt, randomUUID } from 'node:crypto';
import { Cloud1Error } from './errors';

export const CURRENT = 'AWSCURRENT';
export const PREVIOUS = 'AWSPREVIOUS';

const NAME_CHARS = /^[A-Za-z0-9/_+=.@-]+$/;
const MAX_NAME = 512;
const MAX_VALUE_BYTES = 65536;
const MAX_DESCRIPTION = 2048;
const MAX_TAGS = 50;
/** The provider keeps about this many versions; older ones without a stage are dropped. */
const MAX_VERSIONS = 100;
const SUFFIX_CHARS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const DAY_MS = 24 * 60 * 60 * 1000;

type Json = Record<string, unknown>;

export interface SecretVersion {
  versionId: string;
  secretString: string | undefined;
  secretBinary: Buffer | undefined;
  createdDate: number;
  stages: Set<string>;
}

export interface StoredSecret {
  accountId: string;
  region: string;
  name: string;
  arn: string;
  description: string | undefined;
  kmsKeyId: string | undefined;
  tags: Array<{ Key: string; Value: string }>;
  createdDate: number;
  lastChangedDate: number;
  lastAccessedDate: number | undefined;
  /** When a scheduled deletion takes effect; the secret is purged once it has passed. */
  deletedDate: number | undefined;
  /** Oldest first. */
  versions: SecretVersion[];
}

/** What the admin view shows of one secret: everything, values included. */
export interface SecretsManagerSecretView {
  accountId: string;
  region: string;
  name: string;
  arn: string;
  description?: string;
  tags: Record<string, string>;
  createdDate: string;
  deletionDate?: string;
  versions: Array<{ versionId: string; stages: string[]; secretString?: string; secretBinary?: string; createdDate: string }>;
}

export interface SecretsManagerCaller {
  accountId: string;
  region: string;
  now: number;
}

const exception = (name: string, message: string, status = 400): Cloud1Error => new Cloud1Error(name, status, message);
const notFound = (message = "Secrets Manager can't find the specified secret."): Cloud1Error =>
  exception('ResourceNotFoundException', message);
const invalidParameter = (message: string): Cloud1Error => exception('InvalidParameterException', message);
const invalidRequest = (message: string): Cloud1Error => exception('InvalidRequestException', message);
const validation = (field: string, constraint: string): Cloud1Error =>
  exception('ValidationException', `1 validation error detected: Value at '${field}' failed to satisfy constraint: ${constraint}`);
const markedForDeletion = (): Cloud1Error =>
  invalidRequest("You can't perform this operation on the secret because it was marked for deletion.");

function optionalString(body: Json, field: string): string | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw exception('SerializationException', `${field} must be a string`);
  return value;
}

function requiredString(body: Json, field: string): string {
  const value = optionalString(body, field);
  if (value === undefined) {
    const member = field.charAt(0).toLowerCase() + field.slice(1);
    throw validation(member, 'Member must not be null');
  }
  return value;
}

function optionalNumber(body: Json, field: string): number | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value)) throw exception('SerializationException', `${field} must be a number`);
  return value;
}

function optionalBoolean(body: Json, field: string): boolean | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'boolean') throw exception('SerializationException', `${field} must be a boolean`);
  return value;
}

function checkName(name: string): void {
  if (name.length > MAX_NAME) throw validation('name', `Member must have length less than or equal to ${MAX_NAME}`);
  if (name.length === 0) throw validation('name', 'Member must have length greater than or equal to 1');
  if (!NAME_CHARS.test(name)) {
    throw invalidParameter('Invalid name. Must be a valid name containing alphanumeric characters, or any of the following: -/_+=.@!');
  }
}

function checkDescription(description: string | undefined): void {
  if (description !== undefined && description.length > MAX_DESCRIPTION) {
    throw validation('description', `Member must have length less than or equal to ${MAX_DESCRIPTION}`);
  }
}

function checkToken(token: string | undefined): void {
  if (token !== undefined && (token.length < 32 || token.length > 64)) {
    throw validation('clientRequestToken', 'Member must have length between 32 and 64');
  }
}

/** The value of a request: at most one of the two fields, within the size limit. */
function readValue(body: Json): { secretString?: string; secretBinary?: Buffer } | undefined {
  const secretString = optionalString(body, 'SecretString');
  const binaryText = optionalString(body, 'SecretBinary');
  if (secretString !== undefined && binaryText !== undefined) {
    throw invalidParameter('You can\'t specify both SecretString and SecretBinary in the same request.');
  }
  if (secretString !== undefined) {
    if (Buffer.byteLength(secretString, 'utf8') > MAX_VALUE_BYTES) {
      throw validation('secretString', `Member must have length less than or equal to ${MAX_VALUE_BYTES}`);
    }
    return { secretString };
  }
  if (binaryText !== undefined) {
    const secretBinary = Buffer.from(binaryText, 'base64');
    if (secretBinary.length > MAX_VALUE_BYTES) {
      throw validation('secretBinary', `Member must have length less than or equal to ${MAX_VALUE_BYTES}`);
    }
    return { secretBinary };
  }
  return undefined;
}

function readTags(body: Json, field = 'Tags'): Array<{ Key: string; Value: string }> {
  const raw = body[field];
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) throw exception('SerializationException', `${field} must be a list`);
  if (raw.length > MAX_TAGS) throw validation('tags', `Member must have length less than or equal to ${MAX_TAGS}`);
  return raw.map((tag: unknown) => {
    const entry = (tag ?? {}) as Json;
    const key = optionalString(entry, 'Key') ?? '';
    const value = optionalString(entry, 'Value') ?? '';
    if (key.length < 1 || key.length > 128) throw validation('tags.member.key', 'Member must have length between 1 and 128');
    if (value.length > 256) throw validation('tags.member.value', 'Member must have length less than or equal to 256');
    if (key.toLowerCase().startsWith('aws:')) throw invalidParameter('Tag keys that start with aws: are reserved.');
    return { Key: key, Value: value };
  });
}

const seconds = (ms: number): number => ms / 1000;
const sameValue = (version: SecretVersion, value: { secretString?: string; secretBinary?: Buffer }): boolean =>
  version.secretString === value.secretString &&
  (version.secretBinary === undefined
    ? value.secretBinary === undefined
    : value.secretBinary !== undefined && version.secretBinary.equals(value.secretBinary));

export class SecretsManager {
  /** By `account/region/name`. */
  private readonly secrets = new Map<string, StoredSecret>();

  reset(): void {
    this.secrets.clear();
  }

  /** Every secret of every account, values included, for tests to look at. */
  view(now: number): SecretsManagerSecretView[] {
    this.purgeDue(now);
    return [...this.secrets.values()].map((s) => ({
      accountId: s.accountId,
      region: s.region,
      name: s.name,
      arn: s.arn,
      ...(s.description === undefined ? {} : { description: s.description }),
      tags: Object.fromEntries(s.tags.map((t) => [t.Key, t.Value])),
      createdDate: new Date(s.createdDate).toISOString(),
      ...(s.deletedDate === undefined ? {} : { deletionDate: new Date(s.deletedDate).toISOString() }),
      versions: s.versions.map((v) => ({
        versionId: v.versionId,
        stages: [...v.stages],
        ...(v.secretString === undefined ? {} : { secretString: v.secretString }),
        ...(v.secretBinary === undefined ? {} : { secretBinary: v.secretBinary.toString('base64') }),
        createdDate: new Date(v.createdDate).toISOString(),
      })),
    }));
  }

  /** Runs one operation (the part of X-Amz-Target after `secretsmanager.`). */
  call(operation: string, caller: SecretsManagerCaller, body: Json): Json {
    this.purgeDue(caller.now);
    switch (operation) {
      case 'CreateSecret':
        return this.create(caller, body);
      case 'PutSecretValue':
        return this.putValue(caller, body);
      case 'UpdateSecret':
        return this.update(caller, body);
      case 'GetSecretValue':
        return this.getValue(caller, body);
      case 'DescribeSecret':
        return describe(this.find(caller, body));
      case 'ListSecrets':
        return this.list(caller, body);
      case 'DeleteSecret':
        return this.remove(caller, body);
      case 'RestoreSecret':
        return this.restore(caller, body);
      case 'TagResource':
        return this.tag(caller, body);
      case 'UntagResource':
        return this.untag(caller, body);
      default:
        throw exception('UnknownOperationException', `Unknown operation ${operation}`);
    }
  }

  private create(caller: SecretsManagerCaller, body: Json): Json {
    const name = requiredString(body, 'Name');
    checkName(name);
    const description = optionalString(body, 'Description');
    checkDescription(description);
    const token = optionalString(body, 'ClientRequestToken');
    checkToken(token);
    const value = readValue(body);
    const tags = readTags(body);
    const existing = this.secrets.get(keyOf(caller, name));
    if (existing) {
      if (existing.deletedDate !== undefined) {
        throw invalidRequest("You can't create this secret because a secret with this name is already scheduled for deletion.");
      }
      // A retried create (same token, same value) is answered as the first one was.
      const retried = token === undefined ? undefined : existing.versions.find((v) => v.versionId === token);
      if (retried && value && sameValue(retried, value)) return { ARN: existing.arn, Name: existing.name, VersionId: retried.versionId };
      throw exception('ResourceExistsException', `The operation failed because the secret ${name} already exists.`);
    }
    const secret: StoredSecret = {
      accountId: caller.accountId,
      region: caller.region,
      name,
      arn: `arn:aws:secretsmanager:${caller.region}:${caller.accountId}:secret:${name}-${randomSuffix()}`,
      description,
      kmsKeyId: optionalString(body, 'KmsKeyId'),
      tags,
      createdDate: caller.now,
      lastChangedDate: caller.now,
      lastAccessedDate: undefined,
      deletedDate: undefined,
      versions: [],
    };
    this.secrets.set(keyOf(caller, name), secret);
    if (!value) return { ARN: secret.arn, Name: secret.name };
    const version = addVersion(secret, value, token, [CURRENT], caller.now);
    return { ARN: secret.arn, Name: secret.name, VersionId: version.versionId };
  }

  private putValue(caller: SecretsManagerCaller, body: Json): Json {
    const secret = this.find(caller, body);
    const token = optionalString(body, 'ClientRequestToken');
    checkToken(token);
    const value = readValue(body);
    if (!value) throw invalidRequest('You must provide either SecretString or SecretBinary.');
    const stages = optionalStringList(body, 'VersionStages') ?? [CURRENT];
    if (secret.deletedDate !== undefined) throw markedForDeletion();
    const version = writeVersion(secret, value, token, stages, caller.now);
    return { ARN: secret.arn, Name: secret.name, VersionId: version.versionId, VersionStages: [...version.stages] };
  }

  private update(caller: SecretsManagerCaller, body: Json): Json {
    const secret = this.find(caller, body);
    const description = optionalString(body, 'Description');
    checkDescription(description);
    const token = optionalString(body, 'ClientRequestToken');
    checkToken(token);
    const value = readValue(body);
    if (secret.deletedDate !== undefined) throw markedForDeletion();
    if (description !== undefined) secret.description = description;
    const kmsKeyId = optionalString(body, 'KmsKeyId');
    if (kmsKeyId !== undefined) secret.kmsKeyId = kmsKeyId;
    secret.lastChangedDate = caller.now;
    if (!value) return { ARN: secret.arn, Name: secret.name };
    const version = writeVersion(secret, value, token, [CURRENT], caller.now);
    return { ARN: secret.arn, Name: secret.name, VersionId: version.versionId };
  }

  private getValue(caller: SecretsManagerCaller, body: Json): Json {
    const secret = this.find(caller, body);
    const versionId = optionalString(body, 'VersionId');
    const stage = optionalString(body, 'VersionStage');
    if (secret.deletedDate !== undefined) throw markedForDeletion();
    const version = secret.versions.find((v) =>
      versionId !== undefined ? v.versionId === versionId && (stage === undefined || v.stages.has(stage)) : v.stages.has(stage ?? CURRENT),
    );
    if (!version) {
      throw notFound(
        versionId !== undefined
          ? `Secrets Manager can't find the specified secret value for VersionId: ${versionId}`
          : `Secrets Manager can't find the specified secret value for staging label: ${stage ?? CURRENT}`,
      );
    }
    secret.lastAccessedDate = Math.floor(caller.now / DAY_MS) * DAY_MS;
    return {
      ARN: secret.arn,
      Name: secret.name,
      VersionId: version.versionId,
      ...(version.secretString === undefined ? {} : { SecretString: version.secretString }),
      ...(version.secretBinary === undefined ? {} : { SecretBinary: version.secretBinary.toString('base64') }),
      VersionStages: [...version.stages],
      CreatedDate: seconds(version.createdDate),
    };
  }

  private list(caller: SecretsManagerCaller, body: Json): Json {
    const maxResults = optionalNumber(body, 'MaxResults') ?? 100;
    if (!Number.isInteger(maxResults) || maxResults < 1 || maxResults > 100) {
      throw validation('maxResults', 'Member must have value between 1 and 100');
    }
    const includeDeleted = optionalBoolean(body, 'IncludePlannedDeletion') ?? false;
    const filters = readFilters(body);
    const all = [...this.secrets.values()]
      .filter((s) => s.accountId === caller.accountId && s.region === caller.region)
      .filter((s) => includeDeleted || s.deletedDate === undefined)
      .filter((s) => filters.every((f) => f.values.some((v) => matchesFilter(s, f.key, v))))
      .sort((a, b) => a.createdDate - b.createdDate || a.name.localeCompare(b.name));
    const token = optionalString(body, 'NextToken');
    const start = token === undefined ? 0 : Number.parseInt(Buffer.from(token, 'base64').toString('utf8'), 10);
    if (!Number.isInteger(start) || start < 0 || start > all.length) throw invalidParameter('Invalid NextToken.');
    const page = all.slice(start, start + maxResults);
    const next = start + maxResults < all.length ? Buffer.from(String(start + maxResults)).toString('base64') : undefined;
    const list = page.map((s) => {
      const { VersionIdsToStages, ...rest } = describe(s);
      return { ...rest, SecretVersionsToStages: VersionIdsToStages };
    });
    return next === undefined ? { SecretList: list } : { SecretList: list, NextToken: next };
  }

  private remove(caller: SecretsManagerCaller, body: Json): Json {
    const secret = this.find(caller, body);
    const force = optionalBoolean(body, 'ForceDeleteWithoutRecovery') ?? false;
    const window = optionalNumber(body, 'RecoveryWindowInDays');
    if (force && window !== undefined) {
      throw invalidParameter("You can't use ForceDeleteWithoutRecovery in conjunction with RecoveryWindowInDays.");
    }
    if (window !== undefined && (!Number.isInteger(window) || window < 7 || window > 30)) {
      throw invalidParameter('The RecoveryWindowInDays value must be between 7 and 30 days (inclusive).');
    }
    if (force) {
      this.secrets.delete(keyOf(secret, secret.name));
      return { ARN: secret.arn, Name: secret.name, DeletionDate: seconds(caller.now) };
    }
    if (secret.deletedDate !== undefined) {
      throw invalidRequest("You can't perform this operation on the secret because it was already scheduled for deletion.");
    }
    secret.deletedDate = caller.now + (window ?? 30) * DAY_MS;
    return { ARN: secret.arn, Name: secret.name, DeletionDate: seconds(secret.deletedDate) };
  }

  private restore(caller: SecretsManagerCaller, body: Json): Json {
    const secret = this.find(caller, body);
    secret.deletedDate = undefined;
    return { ARN: secret.arn, Name: secret.name };
  }

  private tag(caller: SecretsManagerCaller, body: Json): Json {
    const secret = this.find(caller, body);
    const tags = readTags(body);
    if (secret.deletedDate !== undefined) throw markedForDeletion();
    for (const tag of tags) {
      const existing = secret.tags.find((t) => t.Key === tag.Key);
      if (existing) existing.Value = tag.Value;
      else secret.tags.push(tag);
    }
    if (secret.tags.length > MAX_TAGS) throw validation('tags', `Member must have length less than or equal to ${MAX_TAGS}`);
    return {};
  }

  private untag(caller: SecretsManagerCaller, body: Json): Json {
    const secret = this.find(caller, body);
    const keys = optionalStringList(body, 'TagKeys') ?? [];
    if (secret.deletedDate !== undefined) throw markedForDeletion();
    secret.tags = secret.tags.filter((t) => !keys.includes(t.Key));
    return {};
  }

  /** `SecretId` is a name or a full ARN, looked up in the caller's account and region. */
  private find(caller: SecretsManagerCaller, body: Json): StoredSecret {
    const id = requiredString(body, 'SecretId');
    if (id.length > 2048) throw validation('secretId', 'Member must have length less than or equal to 2048');
    const secret = id.startsWith('arn:')
      ? [...this.secrets.values()].find((s) => s.arn === id)
      : this.secrets.get(keyOf(caller, id));
    if (!secret || secret.accountId !== caller.accountId || secret.region !== caller.region) throw notFound();
    return secret;
  }

  private purgeDue(now: number): void {
    for (const [key, secret] of this.secrets) {
      if (secret.deletedDate !== undefined && secret.deletedDate <= now) this.secrets.delete(key);
    }
  }
}

function keyOf(where: { accountId: string; region: string }, name: string): string {
  return `${where.accountId}/${where.region}/${name}`;
}

function randomSuffix(): string {
  let out = '';
  for (let i = 0; i < 6; i++) out += SUFFIX_CHARS[randomInt(SUFFIX_CHARS.length)];
  return out;
}

function optionalStringList(body: Json, field: string): string[] | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value) || value.some((v) => typeof v !== 'string')) {
    throw exception('SerializationException', `${field} must be a list of strings`);
  }
  return value as string[];
}

function readFilters(body: Json): Array<{ key: string; values: string[] }> {
  const raw = body.Filters;
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) throw exception('SerializationException', 'Filters must be a list');
  return raw.map((f: unknown) => {
    const entry = (f ?? {}) as Json;
    const key = optionalString(entry, 'Key') ?? '';
    if (!['name', 'description', 'tag-key', 'tag-value', 'all'].includes(key)) {
      throw validation('filters.member.key', 'Member must satisfy enum value set: [name, description, tag-key, tag-value, all]');
    }
    return { key, values: optionalStringList(entry, 'Values') ?? [] };
  });
}

/** The provider matches filter values as case-sensitive prefixes. */
function matchesFilter(secret: StoredSecret, key: string, value: string): boolean {
  const candidates =
    key === 'name' ? [secret.name]
    : key === 'description' ? [secret.description ?? '']
    : key === 'tag-key' ? secret.tags.map((t) => t.Key)
    : key === 'tag-value' ? secret.tags.map((t) => t.Value)
    : [secret.name, secret.description ?? '', ...secret.tags.flatMap((t) => [t.Key, t.Value])];
  return candidates.some((c) => c.startsWith(value));
}

function describe(secret: StoredSecret): Json {
  return {
    ARN: secret.arn,
    Name: secret.name,
    ...(secret.description === undefined ? {} : { Description: secret.description }),
    ...(secret.kmsKeyId === undefined ? {} : { KmsKeyId: secret.kmsKeyId }),
    LastChangedDate: seconds(secret.lastChangedDate),
    ...(secret.lastAccessedDate === undefined ? {} : { LastAccessedDate: seconds(secret.lastAccessedDate) }),
    ...(secret.deletedDate === undefined ? {} : { DeletedDate: seconds(secret.deletedDate) }),
    Tags: secret.tags.map((t) => ({ ...t })),
    VersionIdsToStages: Object.fromEntries(secret.versions.filter((v) => v.stages.size > 0).map((v) => [v.versionId, [...v.stages]])),
    CreatedDate: seconds(secret.createdDate),
  };
}

/**
 * A write under a token that already names a version is a retry: answered with that version
 * when the value is the same, refused when it differs (a version's value never changes).
 */
function writeVersion(
  secret: StoredSecret,
  value: { secretString?: string; secretBinary?: Buffer },
  token: string | undefined,
  stages: string[],
  now: number,
): SecretVersion {
  const existing = token === undefined ? undefined : secret.versions.find((v) => v.versionId === token);
  if (existing) {
    if (!sameValue(existing, value)) {
      throw exception('ResourceExistsException', "You can't modify an existing version, you can only create a new version.");
    }
    return existing;
  }
  return addVersion(secret, value, token, stages, now);
}

function addVersion(
  secret: StoredSecret,
  value: { secretString?: string; secretBinary?: Buffer },
  token: string | undefined,
  stages: string[],
  now: number,
): SecretVersion {
  const version: SecretVersion = {
    versionId: token ?? randomUUID(),
    secretString: value.secretString,
    secretBinary: value.secretBinary,
    createdDate: now,
    stages: new Set(stages),
  };
  if (version.stages.has(CURRENT)) {
    const previous = secret.versions.find((v) => v.stages.has(CURRENT));
    for (const v of secret.versions) v.stages.delete(PREVIOUS);
    if (previous) {
      previous.stages.delete(CURRENT);
      previous.stages.add(PREVIOUS);
    }
  }
  for (const stage of version.stages) {
    if (stage === CURRENT || stage === PREVIOUS) continue;
    for (const v of secret.versions) v.stages.delete(stage);
  }
  secret.versions.push(version);
  secret.lastChangedDate = now;
  while (secret.versions.length > MAX_VERSIONS) {
    const index = secret.versions.findIndex((v) => v.stages.size === 0);
    if (index < 0) break;
    secret.versions.splice(index, 1);
  }
  return version;
}
