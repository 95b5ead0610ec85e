import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { call, initAndUnseal, startTestServer, type TestServer } from './test-support/servers';

const nested = (depth: number, inner: unknown = 'deep'): unknown => {
  let value = inner;
  for (let i = 0; i < depth; i++) value = { n: value };
  return value;
};

/** A body as text: JSON.stringify itself recurses, and would overflow at the depths tried here. */
const nestedText = (depth: number): string => '{"n":'.repeat(depth) + '"deep"' + '}'.repeat(depth);

describe('the JSON limits of a listener', () => {
  let t: TestServer;
  let root: string;
  let auditDir: string;

  beforeAll(async () => {
    t = await startTestServer();
    root = await initAndUnseal(t);
    auditDir = mkdtempSync(join(tmpdir(), 'strongroom-audit-'));
  });
  afterAll(async () => {
    await t.stop();
    rmSync(auditDir, { recursive: true, force: true });
  });

  it('refuses deep nesting with 400 naming max_json_depth, wherever the body goes', async () => {
    const kv = await call(t.url, 'POST', 'secret/data/deep', { token: root, raw: `{"data":${nestedText(5000)}}` });
    expect(kv.status).toBe(400);
    expect(kv.json.errors).toEqual(['JSON input is nested deeper than max_json_depth (500) allows']);
    const wrap = await call(t.url, 'POST', 'sys/wrapping/wrap', { token: root, raw: `{"v":${nestedText(10_000)}}` });
    expect(wrap.status).toBe(400);
    expect(wrap.json.errors[0]).toMatch(/max_json_depth/);
  });

  it('serves a body nested to the limit end to end, also through a file audit device', async () => {
    const log = join(auditDir, 'audit.log');
    expect((await call(t.url, 'POST', 'sys/audit/file', { token: root, body: { type: 'file', options: { file_path: log } } })).status).toBe(204);
    try {
      // 500 levels in all: the body's own object and 499 below it.
      const written = await call(t.url, 'POST', 'secret/data/at-limit', { token: root, raw: `{"data":${nestedText(499)}}` });
      expect(written.status).toBe(200);
      const read = await call(t.url, 'GET', 'secret/data/at-limit', { token: root });
      expect(read.json.data.data).toEqual(nested(499));
      const wrapped = await call(t.url, 'POST', 'sys/wrapping/wrap', { token: root, raw: `{"v":${nestedText(499)}}` });
      expect(wrapped.status).toBe(200);

      // Any request, any path, even one that needs no token.
      for (const path of ['secret/data/deep', 'sys/wrapping/unwrap', 'auth/token/create', 'nowhere/at/all']) {
        const deep = await call(t.url, 'POST', path, { token: root, raw: `{"a":${nestedText(10_000)}}` });
        expect(deep.status).toBe(400);
        expect(deep.json.errors[0]).toMatch(/max_json_depth/);
      }
      expect(readFileSync(log, 'utf8')).toContain('secret/data/at-limit');
      expect((await call(t.url, 'GET', 'sys/health')).status).toBe(200);
    } finally {
      await call(t.url, 'DELETE', 'sys/audit/file', { token: root });
    }
  });

  it('says where a malformed body fails, without quoting it', async () => {
    const res = await call(t.url, 'POST', 'secret/data/x', { token: root, raw: '{"data": {\n  "password":PLAINTEXT-hunter2}}' });
    expect(res.status).toBe(400);
    expect(res.json.errors).toEqual(['failed to parse JSON input: unexpected character at line 2, column 14']);
    expect(res.text).not.toMatch(/PLAINTEXT|hunter2/);
  });
});

describe('a listener with its own JSON limits', () => {
  let t: TestServer;
  let root: string;

  beforeAll(async () => {
    t = await startTestServer({ jsonLimits: { maxDepth: 4, maxStringLength: 16, maxObjectEntries: 3, maxArrayElements: 2 } });
    root = await initAndUnseal(t);
  });
  afterAll(() => t.stop());

  it.each([
    ['max_json_depth', { data: nested(4) }, 'JSON input is nested deeper than max_json_depth (4) allows'],
    ['max_json_string_value_length', { data: { v: 'x'.repeat(17) } }, 'a JSON string in the input is longer than max_json_string_value_length (16 bytes) allows'],
    ['max_json_string_value_length, naming a top-level field', { options: 'x'.repeat(17) }, 'options: the value is longer than max_json_string_value_length (16 bytes) allows'],
    ['max_json_object_entry_count', { data: { a: 1, b: 2, c: 3, d: 4 } }, 'a JSON object in the input has more entries than max_json_object_entry_count (3) allows'],
    ['max_json_array_element_count', { data: { v: [1, 2, 3] } }, 'a JSON array in the input has more elements than max_json_array_element_count (2) allows'],
  ])('refuses a body over %s', async (_limit, body, message) => {
    const res = await call(t.url, 'POST', 'secret/data/x', { token: root, body });
    expect(res.status).toBe(400);
    expect(res.json).toEqual({ errors: [message] });
  });

  it('takes a body within all of them', async () => {
    const res = await call(t.url, 'POST', 'secret/data/x', { token: root, body: { data: { v: [1, 2], w: 'x'.repeat(16), z: nested(1) } } });
    expect(res.status).toBe(200);
  });
});
