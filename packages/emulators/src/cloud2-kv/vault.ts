/**
 * The secrets of one key vault and the rules the service applies to them: names of 1-127
 * letters, digits and dashes, compared without case; values up to 25 KiB; at most 15 tags;
 * every write a new version with a 32-hex id; delete keeps the secret soft-deleted (its name
 * reserved) until it is recovered or purged.
 */
import { randomBytes } from 'node:crypto';
import { HttpError, isRecord } from '../json-http';

export const MAX_VALUE_BYTES = 25 * 1024;
const NAME = /^[0-9a-zA-Z-]{1,127}$/;
const MAX_TAGS = 15;
const RECOVERABLE_DAYS = 90;

export interface Attributes {
  enabled: boolean;
  nbf?: number;
  exp?: number;
  created: number;
  updated: number;
}

export interface SecretVersion {
  version: string;
  value: string;
  contentType?: string;
  tags: Record<string, string>;
  attributes: Attributes;
}

export interface StoredSecret {
  name: string;
  versions: SecretVersion[];
  /** Set while soft-deleted. */
  deleted?: { deletedDate: number; scheduledPurgeDate: number };
}

export const vaultError = (status: number, code: string, message: string, inner?: string): HttpError =>
  new HttpError(status, { error: { code, message, ...(inner ? { innererror: { code: inner } } : {}) } });
export const badParameter = (message: string): HttpError => vaultError(400, 'BadParameter', message);
export const secretNotFound = (what: string): HttpError =>
  vaultError(404, 'SecretNotFound', `A secret with (name/id) ${what} was not found in this key vault.`);
const deletedNotFound = (name: string): HttpError => vaultError(404, 'SecretNotFound', `Deleted Secret not found: ${name}`);

export function checkName(name: string): string {
  if (!NAME.test(name)) {
    throw badParameter(`The request URI contains an invalid name: ${name}. Secret names are 1-127 letters, digits and dashes.`);
  }
  return name;
}

const seconds = (): number => Math.floor(Date.now() / 1000);

export class Vault {
  private readonly secrets = new Map<string, StoredSecret>();

  constructor(readonly url: string) {}

  /** `PUT /secrets/{name}`: a new version, enabled unless the body says otherwise. */
  set(name: string, body: unknown): { secret: StoredSecret; version: SecretVersion } {
    checkName(name);
    if (!isRecord(body)) throw badParameter('The request body must be a JSON object with a value.');
    const { value, contentType, tags, attributes } = body;
    if (typeof value !== 'string') throw badParameter("The parameter 'value' is required and must be a string.");
    if (Buffer.byteLength(value) > MAX_VALUE_BYTES) throw badParameter(`The secret value is larger than ${MAX_VALUE_BYTES} bytes.`);
    let secret = this.secrets.get(name.toLowerCase());
    if (secret?.deleted) {
      throw vaultError(
        409,
        'Conflict',
        `Secret ${secret.name} is deleted but recoverable; its name cannot be reused until it is recovered or purged.`,
        'ObjectIsDeletedButRecoverable',
      );
    }
    const now = seconds();
    const version: SecretVersion = {
      version: randomBytes(16).toString('hex'),
      value,
      tags: checkTags(tags),
      attributes: { enabled: true, ...checkAttributes(attributes), created: now, updated: now },
      ...checkContentType(contentType),
    };
    if (!secret) {
      secret = { name, versions: [] };
      this.secrets.set(name.toLowerCase(), secret);
    }
    secret.versions.push(version);
    return { secret, version };
  }

  /** A live secret and one of its versions (the latest when `version` is empty). */
  get(name: string, version = ''): { secret: StoredSecret; version: SecretVersion } {
    checkName(name);
    const secret = this.secrets.get(name.toLowerCase());
    if (!secret || secret.deleted) throw secretNotFound(version ? `${name}/${version}` : name);
    const found = version ? secret.versions.find((v) => v.version === version) : secret.versions.at(-1);
    if (!found) throw secretNotFound(`${name}/${version}`);
    return { secret, version: found };
  }

  /** `PATCH /secrets/{name}/{version}`: attributes, tags and content type; never the value. */
  update(name: string, version: string, body: unknown): { secret: StoredSecret; version: SecretVersion } {
    const found = this.get(name, version);
    if (!isRecord(body)) throw badParameter('The request body must be a JSON object.');
    const v = found.version;
    if (body.tags !== undefined) v.tags = checkTags(body.tags);
    if (body.contentType !== undefined) Object.assign(v, checkContentType(body.contentType));
    Object.assign(v.attributes, checkAttributes(body.attributes), { updated: seconds() });
    return found;
  }

  delete(name: string): StoredSecret {
    const { secret } = this.get(name);
    const now = seconds();
    secret.deleted = { deletedDate: now, scheduledPurgeDate: now + RECOVERABLE_DAYS * 86_400 };
    return secret;
  }

  deleted(name: string): StoredSecret {
    checkName(name);
    const secret = this.secrets.get(name.toLowerCase());
    if (!secret?.deleted) throw deletedNotFound(name);
    return secret;
  }

  recover(name: string): StoredSecret {
    const secret = this.deleted(name);
    delete secret.deleted;
    return secret;
  }

  purge(name: string): void {
    this.secrets.delete(this.deleted(name).name.toLowerCase());
  }

  list(deleted: boolean): StoredSecret[] {
    return [...this.secrets.values()].filter((s) => Boolean(s.deleted) === deleted).sort((a, b) => (a.name < b.name ? -1 : 1));
  }

  clear(): void {
    this.secrets.clear();
  }

  /** The secret bundle the API returns; `withValue` false for properties-only answers. */
  bundle(secret: StoredSecret, version: SecretVersion, withValue: boolean): Record<string, unknown> {
    return {
      ...(withValue ? { value: version.value } : {}),
      ...(version.contentType === undefined ? {} : { contentType: version.contentType }),
      id: `${this.url}/secrets/${secret.name}/${version.version}`,
      attributes: this.attributes(version),
      tags: { ...version.tags },
      ...this.deletion(secret),
    };
  }

  /** A list entry: the secret (or version) id, attributes and tags, never the value. */
  item(secret: StoredSecret, version: SecretVersion, withVersion: boolean): Record<string, unknown> {
    return {
      id: `${this.url}/secrets/${secret.name}${withVersion ? `/${version.version}` : ''}`,
      attributes: this.attributes(version),
      tags: { ...version.tags },
      ...(version.contentType === undefined ? {} : { contentType: version.contentType }),
      ...this.deletion(secret),
    };
  }

  private attributes(version: SecretVersion): Record<string, unknown> {
    return { ...version.attributes, recoveryLevel: 'Recoverable+Purgeable', recoverableDays: RECOVERABLE_DAYS };
  }

  private deletion(secret: StoredSecret): Record<string, unknown> {
    if (!secret.deleted) return {};
    return { recoveryId: `${this.url}/deletedsecrets/${secret.name}`, ...secret.deleted };
  }
}

function checkTags(tags: unknown): Record<string, string> {
  if (tags === undefined || tags === null) return {};
  if (!isRecord(tags)) throw badParameter('tags must be an object of strings.');
  const entries = Object.entries(tags);
  if (entries.length > MAX_TAGS) throw badParameter(`A secret may have at most ${MAX_TAGS} tags.`);
  for (const [key, value] of entries) {
    if (typeof value !== 'string') throw badParameter(`The value of tag ${key} must be a string.`);
    if (key.length > 512 || value.length > 256) throw badParameter('Tag names are at most 512 characters and tag values at most 256.');
  }
  return Object.fromEntries(entries) as Record<string, string>;
}

function checkContentType(contentType: unknown): { contentType?: string } {
  if (contentType === undefined || contentType === null) return {};
  if (typeof contentType !== 'string' || contentType.length > 255) throw badParameter('contentType must be a string of at most 255 characters.');
  return { contentType };
}

function checkAttributes(attributes: unknown): Partial<Attributes> {
  if (attributes === undefined || attributes === null) return {};
  if (!isRecord(attributes)) throw badParameter('attributes must be an object.');
  const result: Partial<Attributes> = {};
  if (attributes.enabled !== undefined) {
    if (typeof attributes.enabled !== 'boolean') throw badParameter('attributes.enabled must be a boolean.');
    result.enabled = attributes.enabled;
  }
  for (const field of ['nbf', 'exp'] as const) {
    const value = attributes[field];
    if (value === undefined || value === null) continue;
    if (typeof value !== 'number' || !Number.isInteger(value)) throw badParameter(`attributes.${field} must be a whole number of seconds.`);
    result[field] = value;
  }
  return result;
}
