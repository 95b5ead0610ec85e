import type { FieldSchema } from '@strongroom/core';
import type { Random } from '../../../../raft/src/test-support/seeded-random';

/** JSON text placed as is in a body: numbers no JavaScript value prints (1e400) and deep nesting. */
export class RawJson {
  constructor(readonly text: string, readonly label: string) {}
}

const MIB = 1024 * 1024;
const HUGE_STRING = 'a'.repeat(MIB);

function nestedArrays(depth: number): RawJson {
  return new RawJson(`${'['.repeat(depth)}${']'.repeat(depth)}`, `array nested ${depth} deep`);
}

function nestedObjects(depth: number): RawJson {
  return new RawJson(`${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`, `object nested ${depth} deep`);
}

/**
 * Names that reach the same few objects again and again, so that a create is followed by
 * reads, updates and deletes of the same thing, and by calls that use it (encrypt with a key).
 */
export const PLAIN_NAMES = ['fz', 'fz-1', 'fz_2', 'fz.3'];

/** Names a path should refuse or treat as data, never crash on. */
export const ODD_NAMES = [
  '.', '..', '../../x', 'a/../b', './a', 'a\u0000b', '\u0000', 'a\ud800b', '\udfff', '\ud83d',
  'ключ-☃-🔑', 'ﬀ', 'e\u0301', 'x'.repeat(300), 'y'.repeat(5000), '%', '%2e%2e', '%00', '?a=b', '#frag', ' ', ' a ', 'a b',
  'a/b', 'a//b', 'a/', '/a', '\\', '\n', '\t', '*', '+', '"', '\'', '<script>', '1e400', 'true', 'null', '-1',
  'NaN', 'Infinity', '0x10', '__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty',
];

/** Values of every JSON type and shape that no field is meant to take, or only some. */
function badValues(): unknown[] {
  return [
    null, true, false, 0, -1, 1.5, -0.5, 1e308, -1e308, 2 ** 53 + 2, -(2 ** 63), 5e-324, 4294967296,
    // Sizes and counts that are integers, but large: what a path allocates or loops over.
    65_536, 1_000_000, 100_000_000, 2 ** 31 - 1, '1000000', '2147483647',
    new RawJson('1e400', '1e400'), new RawJson('-1e400', '-1e400'), new RawJson('1'.repeat(400), '400 digits'),
    new RawJson('-0', '-0'), new RawJson('1E+2', '1E+2'),
    '', ' ', 'NaN', 'Infinity', '-Infinity', '1e400', '-1e400', '9'.repeat(400), '0x1F', '1_000', ' 12 ', '-0', '+5',
    '99999999999999999999h', '-1s', '1e400s', '1.5h', '5m30', '1ns', '0s', '10000000000000000000000d',
    '2026-13-45T99:99:99Z', '0000-00-00T00:00:00Z', '9999-12-31T23:59:59Z',
    ...ODD_NAMES,
    HUGE_STRING, `${HUGE_STRING},${HUGE_STRING.slice(0, 1000)}`,
    [], [null], [1, 'a', true], [[1]], [{}], [{ a: [] }], ['a', ['b']], Array.from({ length: 100_000 }, (_, i) => i),
    Array.from({ length: 20_000 }, () => 'a,b'),
    {}, { a: 1 }, { a: { b: 'c' } }, { '': '' }, { 'a\u0000': 'b' }, new RawJson('{"__proto__":"x"}', '__proto__ key'), { constructor: { prototype: 1 } },
    { toString: 1, valueOf: 1 }, Object.fromEntries(Array.from({ length: 50_000 }, (_, i) => [`k${i}`, 'v'])),
    nestedArrays(100), nestedArrays(499), nestedArrays(501), nestedArrays(5000), nestedArrays(10_000),
    nestedObjects(100), nestedObjects(499), nestedObjects(501), nestedObjects(5000), nestedObjects(10_000),
  ];
}

const BAD = badValues();

/** Fields whose value the server dials or writes to: they only ever point at this machine. */
export const ENDPOINT_FIELD = /endpoint|_url$|^url$|_addr$|address/;
const LOCAL_PATH_FIELD = /path_prefix|file_path|local_path/;

/**
 * Values that get past the first check of fields (and captures) found on many paths, so that
 * requests reach the code behind it: key types and algorithms, account IDs, versions.
 */
export const KNOWN_VALUES: Record<string, readonly string[]> = {
  type: [
    'kv', 'transit', 'cloud1', 'aes256-gcm96', 'chacha20-poly1305', 'ed25519', 'ecdsa-p256', 'hmac', 'iam_user', 'assumed_role',
    'local', 'plaintext', 'wrapped', 'encryption-key', 'signing-key', 'hmac-key', 'public-key', 'pkcs7', 'identity',
  ],
  account_id: ['123456789012', '000000000000'],
  version: ['1', '2', 'latest'],
  algorithm: ['sha2-256', 'sha2-512', 'sha3-256'],
  hash_algorithm: ['sha2-256', 'sha2-512', 'none'],
  url_first: ['32', 'hex', 'base64', 'platform'],
  url_second: ['16', 'hex', 'base64'],
  versions: ['1', '1,2'],
  credential_type: ['iam_user', 'assumed_role', 'federation_token', 'session_token'],
  rotation_period: ['1h', '24h'],
  auth_type: ['iam', 'vm'],
  signature_algorithm: ['pss', 'pkcs1v15'],
  marshaling_algorithm: ['asn1', 'jws'],
};

export interface ValueContext {
  /** Base URLs that are safe to dial: the emulator, a closed loopback port. */
  endpoints: readonly string[];
  /** A directory the server may write into. */
  scratchDir: string;
  /** Values the server gave out earlier (ciphertexts, accessors, lease IDs), by field name. */
  seen: ReadonlyMap<string, readonly string[]>;
}

const SEEN_PER_FIELD = 16;
const SEEN_MAX_LENGTH = 4096;

/**
 * Keeps the short strings of a successful answer's `data` (and of its batch results, `auth` and
 * lease) under their names, so that later requests send a real ciphertext to decrypt, a real
 * accessor to look up. `withheld` values (the fuzzer's own token and accessor) are never kept.
 */
export function remember(seen: Map<string, string[]>, answer: unknown, withheld: ReadonlySet<string>): void {
  const a = answer as { data?: unknown; auth?: unknown; lease_id?: unknown } | null;
  const keep = (name: string, value: unknown) => {
    if (typeof value !== 'string' || value === '' || value.length > SEEN_MAX_LENGTH || withheld.has(value)) return;
    const list = seen.get(name) ?? [];
    if (list.includes(value)) return;
    list.push(value);
    if (list.length > SEEN_PER_FIELD) list.shift();
    seen.set(name, list);
  };
  const walk = (obj: unknown) => {
    if (!obj || typeof obj !== 'object' || Array.isArray(obj)) return;
    for (const [k, v] of Object.entries(obj)) keep(k, v);
  };
  walk(a?.data);
  walk(a?.auth);
  keep('lease_id', a?.lease_id);
  const batch = (a?.data as { batch_results?: unknown } | undefined)?.batch_results;
  if (Array.isArray(batch)) batch.forEach(walk);
  const token = (a?.auth as { client_token?: unknown } | undefined)?.client_token;
  keep('token', token);
}

/** Fields whose value is a secret: no error message may repeat it. */
const SECRET_FIELD = /secret|password|passphrase|plaintext|private_key/;

/** What a secret field's value looks like in this test, so that an answer repeating one is seen. */
export const SECRET_MARK = /S3CRET-\d+/;

/** A value the field should accept. */
export function plausibleValue(name: string, schema: FieldSchema, rnd: Random, ctx: ValueContext): unknown {
  if (SECRET_FIELD.test(name) && rnd.next() < 0.3) return `S3CRET-${rnd.int(1e9)}`;
  if (ENDPOINT_FIELD.test(name)) return rnd.pick(ctx.endpoints);
  if (LOCAL_PATH_FIELD.test(name)) return `${ctx.scratchDir}/${rnd.pick(PLAIN_NAMES)}`;
  const seen = ctx.seen.get(name);
  if (seen && seen.length > 0 && rnd.next() < 0.6) return rnd.pick(seen);
  if (schema.allowed && schema.allowed.length > 0) {
    // Generating large RSA keys legitimately takes seconds on a busy machine: not what is tested.
    const quick = schema.allowed.filter((v) => !/^rsa-(3072|4096)$/.test(String(v)));
    return rnd.pick(quick.length > 0 ? quick : schema.allowed);
  }
  if (name === 'data' && (schema.type === 'map' || schema.type === 'any')) return rnd.pick([{ a: 'b' }, { n: 1, nested: { x: [1, 2] } }]);
  const known = KNOWN_VALUES[name];
  if (known && rnd.next() < 0.7) return rnd.pick(known);
  const text = schema.type === 'string' || schema.type === 'any';
  if (text && /^(plaintext|input|context|nonce)$/.test(name)) return rnd.pick(['Zm9vYmFy', '', 'AAAA']);
  if (text && (name === 'policy' || name === 'rules')) return 'path "fz/*" { capabilities = ["read", "list"] }';
  switch (schema.type) {
    case 'string': case 'lowercase-string': case 'any': return rnd.pick([...PLAIN_NAMES, 'a', 'default']);
    case 'int': return rnd.pick([0, 1, 2, 10, 3600]);
    case 'bool': return rnd.pick([true, false, 'true', 'false']);
    case 'duration': return rnd.pick(['1h', '30m', 60, '0', 3600]);
    case 'comma-list': return rnd.pick(['a,b', ['a', 'b'], 'default']);
    case 'string-list': return rnd.pick([['a'], ['a', 'b'], []]);
    case 'int-list': return rnd.pick([[1, 2], '1,2', [1]]);
    case 'map': case 'string-map': return rnd.pick([{ a: 'b' }, {}]);
    case 'time': return '2026-01-02T15:04:05Z';
  }
}

/**
 * A value the field should refuse with a 400 or take as data, for any field. A field the server
 * dials or writes to gets only wrong types and harmless strings there: the server must not be
 * pointed at another machine or at a directory of this one by a test.
 */
export function badValue(name: string, rnd: Random, ctx: ValueContext): unknown {
  if (ENDPOINT_FIELD.test(name)) {
    return rnd.pick<unknown>([0, true, [], {}, 'not a url', 'ftp://127.0.0.1/', `${rnd.pick(ctx.endpoints)}/${'p'.repeat(5000)}`, '\u0000', nestedArrays(600)]);
  }
  if (LOCAL_PATH_FIELD.test(name)) {
    return rnd.pick<unknown>([0, true, [], {}, 'relative', '..', `${ctx.scratchDir}/../${'x'.repeat(300)}`, `${ctx.scratchDir}/a\u0000b`, nestedArrays(600)]);
  }
  return rnd.pick(BAD);
}

/** Whole bodies of the wrong shape, whatever the path takes. */
export const ODD_BODIES: RawJson[] = [
  new RawJson('', 'empty body'),
  new RawJson('null', 'null'),
  new RawJson('[]', 'an array'),
  new RawJson('[{"a":1}]', 'an array of objects'),
  new RawJson('"text"', 'a string'),
  new RawJson('123', 'a number'),
  new RawJson('1e400', '1e400'),
  new RawJson('true', 'true'),
  new RawJson('{', 'truncated JSON'),
  new RawJson('{"password":S3CRET-7}', 'malformed JSON around a secret'),
  new RawJson('{"a":1,}', 'a trailing comma'),
  new RawJson('{"a":1}garbage', 'trailing garbage'),
  new RawJson('\ufeff{"a":1}', 'a byte order mark'),
  new RawJson('{"a":"\\ud800"}', 'an escaped lone surrogate'),
  new RawJson('{"__proto__":{"polluted":1}}', '__proto__'),
  nestedArrays(501), nestedArrays(10_000), nestedObjects(501), nestedObjects(10_000),
  new RawJson(`{${Array.from({ length: 100_000 }, (_, i) => `"k${i}":1`).join(',')}}`, '100,000 keys'),
];

/** A short, printable description of a value, for failure reports. */
export function describeValue(value: unknown): string {
  if (value instanceof RawJson) return `<${value.label}>`;
  if (typeof value === 'string') {
    const shown = value.length > 40 ? `${value.slice(0, 40)}... (${value.length} chars)` : value;
    return JSON.stringify(shown);
  }
  if (Array.isArray(value)) return value.length > 5 ? `[array of ${value.length}]` : safeStringify(value);
  if (value && typeof value === 'object') {
    const keys = Object.keys(value);
    return keys.length > 5 ? `{object of ${keys.length} keys}` : safeStringify(value);
  }
  return String(value);
}

function safeStringify(value: unknown): string {
  const text = serializeJson(value);
  return text.length > 80 ? `${text.slice(0, 80)}...` : text;
}

/** JSON text of a body, with each RawJson's text spliced in where it stands. */
export function serializeJson(value: unknown): string {
  if (value instanceof RawJson) return value.text;
  const raws: string[] = [];
  const text = JSON.stringify(value, (_k, v: unknown) => {
    if (v instanceof RawJson) {
      raws.push(v.text);
      return `\u0000raw${raws.length - 1}\u0000`;
    }
    return v;
  });
  return text.replace(/"\\u0000raw(\d+)\\u0000"/g, (_m, i: string) => raws[Number(i)] as string);
}
