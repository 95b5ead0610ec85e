/**
 * Buckets and their objects. A name holds one live generation, as in a bucket without object
 * versioning: an overwrite replaces it under a new generation number.
 */
import { createHash } from 'node:crypto';
import { crc32cBase64 } from './crc32c';
import { badRequest, conditionNotMet, noSuchObject } from './errors';

/** The object resource fields a client may set when it uploads. */
const WRITABLE_FIELDS = ['cacheControl', 'contentDisposition', 'contentLanguage', 'contentType', 'metadata'];

export interface StoredObject {
  bucket: string;
  name: string;
  data: Buffer;
  generation: number;
  metageneration: number;
  fields: Record<string, unknown>;
  md5Hash: string;
  crc32c: string;
  created: string;
}

export interface ObjectPage {
  items: StoredObject[];
  prefixes: string[];
  nextPageToken?: string;
}

export interface Bucket {
  created: string;
  objects: Map<string, StoredObject>;
}

/** Query parameters that make a request conditional on the object's current state. */
const CONDITIONS: Array<[string, (object: StoredObject | undefined, value: number) => boolean]> = [
  ['ifGenerationMatch', (o, v) => (o?.generation ?? 0) === v],
  ['ifGenerationNotMatch', (o, v) => (o?.generation ?? 0) !== v],
  ['ifMetagenerationMatch', (o, v) => o?.metageneration === v],
  ['ifMetagenerationNotMatch', (o, v) => o?.metageneration !== v],
];

const MAX_PAGE = 1000;

export class Cloud3Store {
  private readonly buckets = new Map<string, Bucket>();
  private lastGeneration = 0;

  /** The bucket, created when `create` is set (writes create buckets implicitly). */
  bucket(name: string, create = false): Bucket | undefined {
    let bucket = this.buckets.get(name);
    if (!bucket && create) {
      bucket = { created: new Date().toISOString(), objects: new Map() };
      this.buckets.set(name, bucket);
    }
    return bucket;
  }

  /** Throws 412 unless the request's preconditions hold for the object as it is now. */
  checkConditions(bucket: string, name: string, query: URLSearchParams): void {
    const current = this.buckets.get(bucket)?.objects.get(name);
    for (const [param, holds] of CONDITIONS) {
      const value = query.get(param);
      if (value !== null && !holds(current, Number(value))) throw conditionNotMet();
    }
  }

  /**
   * Stores a new generation. `resource` is what the client sent: its writable fields are kept,
   * and an `md5Hash` or `crc32c` in it must match the data, as GCS verifies them.
   */
  put(bucket: string, name: string, data: Buffer, resource: Record<string, unknown>, query: URLSearchParams): StoredObject {
    this.checkConditions(bucket, name, query);
    const md5Hash = createHash('md5').update(data).digest('base64');
    const crc32c = crc32cBase64(data);
    for (const [field, actual, label] of [['md5Hash', md5Hash, 'MD5'], ['crc32c', crc32c, 'CRC32C']] as const) {
      const expected = resource[field];
      if (expected !== undefined && expected !== actual) {
        throw badRequest(`Provided ${label} hash "${String(expected)}" doesn't match calculated ${label} hash "${actual}".`);
      }
    }
    const fields = Object.fromEntries(WRITABLE_FIELDS.filter((f) => resource[f] !== undefined).map((f) => [f, resource[f]]));
    // Real generations are microsecond timestamps; the max keeps them strictly increasing.
    this.lastGeneration = Math.max(this.lastGeneration + 1, Date.now() * 1000);
    const object: StoredObject = {
      bucket,
      name,
      data,
      generation: this.lastGeneration,
      metageneration: 1,
      fields,
      md5Hash,
      crc32c,
      created: new Date().toISOString(),
    };
    this.bucket(bucket, true)!.objects.set(name, object);
    return object;
  }

  /** The live object, honouring a `generation` selector and the preconditions in `query`. */
  get(bucket: string, name: string, query = new URLSearchParams()): StoredObject {
    const object = this.buckets.get(bucket)?.objects.get(name);
    const generation = query.get('generation');
    if (!object || (generation !== null && Number(generation) !== object.generation)) throw noSuchObject(bucket, name);
    this.checkConditions(bucket, name, query);
    return object;
  }

  delete(bucket: string, name: string, query: URLSearchParams): void {
    this.get(bucket, name, query);
    this.buckets.get(bucket)!.objects.delete(name);
  }

  names(bucket: string): string[] {
    return [...(this.buckets.get(bucket)?.objects.keys() ?? [])].sort();
  }

  /**
   * One page of a listing. With a delimiter, names that continue past it after the prefix roll
   * up into one entry of `prefixes`; items and prefixes together count against `maxResults`, as
   * in GCS. The page token is the (encoded) first name of the next page.
   */
  list(bucket: string, query: URLSearchParams): ObjectPage {
    const prefix = query.get('prefix') ?? '';
    const delimiter = query.get('delimiter') ?? '';
    const token = query.get('pageToken');
    const from = [query.get('startOffset') ?? '', token ? Buffer.from(token, 'base64url').toString() : ''];
    const endOffset = query.get('endOffset');
    const requested = Number(query.get('maxResults'));
    const max = Number.isInteger(requested) && requested > 0 ? Math.min(requested, MAX_PAGE) : MAX_PAGE;

    const page: ObjectPage = { items: [], prefixes: [] };
    for (const name of this.names(bucket)) {
      if (!name.startsWith(prefix) || from.some((start) => name < start) || (endOffset && name >= endOffset)) continue;
      const cut = delimiter ? name.indexOf(delimiter, prefix.length) : -1;
      const rolledUp = cut >= 0 ? name.slice(0, cut + delimiter.length) : undefined;
      if (rolledUp !== undefined && rolledUp === page.prefixes.at(-1)) continue;
      if (page.items.length + page.prefixes.length === max) {
        page.nextPageToken = Buffer.from(name).toString('base64url');
        break;
      }
      if (rolledUp === undefined) page.items.push(this.buckets.get(bucket)!.objects.get(name)!);
      else page.prefixes.push(rolledUp);
    }
    return page;
  }
}

/** The JSON API object resource. Numbers that are int64 in the API travel as strings. */
export function objectResource(object: StoredObject): Record<string, unknown> {
  const { bucket, name, generation, metageneration, created } = object;
  return {
    kind: 'storage#object',
    id: `${bucket}/${name}/${generation}`,
    name,
    bucket,
    generation: String(generation),
    metageneration: String(metageneration),
    contentType: 'application/octet-stream',
    ...object.fields,
    storageClass: 'STANDARD',
    size: String(object.data.length),
    md5Hash: object.md5Hash,
    crc32c: object.crc32c,
    etag: Buffer.from(`${generation}/${metageneration}`).toString('base64'),
    timeCreated: created,
    updated: created,
    timeStorageClassUpdated: created,
  };
}

export function bucketResource(name: string, bucket: Bucket): Record<string, unknown> {
  const { created } = bucket;
  return { kind: 'storage#bucket', id: name, name, location: 'US', storageClass: 'STANDARD', timeCreated: created, updated: created };
}
