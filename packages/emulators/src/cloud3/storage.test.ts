/** The emulator against the real `@google-cloud/storage` SDK: simple calls. */
import { createHash } from 'node:crypto';
import { Storage } from '@google-cloud/storage';
import { runCli } from '../cli';
import { Cloud3StorageEmulator } from './emulator';

let emulator: Cloud3StorageEmulator;
let storage: Storage;

beforeAll(async () => {
  emulator = await Cloud3StorageEmulator.start();
  storage = new Storage({ apiEndpoint: emulator.url, projectId: 'test-project' });
});

afterAll(() => emulator.close());

const md5 = (data: Buffer | string): string => createHash('md5').update(data).digest('base64');

describe('cloud3 storage with the SDK', () => {
  it('stores a multipart upload with its metadata', async () => {
    const file = storage.bucket('simple').file('a/small.txt');
    await file.save('hello', { resumable: false, metadata: { contentType: 'text/plain', metadata: { k: 'v' } } });

    expect(emulator.objectData('simple', 'a/small.txt')?.toString()).toBe('hello');
    const [metadata] = await file.getMetadata();
    expect(metadata).toMatchObject({
      kind: 'storage#object',
      name: 'a/small.txt',
      bucket: 'simple',
      contentType: 'text/plain',
      metadata: { k: 'v' },
      size: '5',
      md5Hash: md5('hello'),
      metageneration: '1',
    });
    expect(metadata.generation).toMatch(/^\d+$/);
  });

  it('reports existence, and a new generation on overwrite', async () => {
    const file = storage.bucket('exists').file('x');
    expect(await file.exists()).toEqual([false]);
    await file.save('one', { resumable: false });
    const [first] = await file.getMetadata();
    await file.save('two', { resumable: false });
    const [second] = await file.getMetadata();
    expect(await file.exists()).toEqual([true]);
    expect(BigInt(second.generation!)).toBeGreaterThan(BigInt(first.generation!));
    expect(second.contentType).toBe('application/octet-stream');
  });

  it('downloads with hash validation', async () => {
    const data = Buffer.from(Array.from({ length: 70_000 }, (_, i) => (i * 31) % 251));
    const file = storage.bucket('download').file('blob.bin');
    await file.save(data, { resumable: false });

    expect((await file.download())[0].equals(data)).toBe(true);
    expect((await file.download({ validation: 'md5' }))[0].equals(data)).toBe(true);
    expect((await file.download({ start: 10, end: 19 }))[0].equals(data.subarray(10, 20))).toBe(true);
    expect((await file.download({ end: -5 }))[0].equals(data.subarray(-5))).toBe(true);

    // Rot the stored bytes: the SDK must notice from x-goog-hash.
    const stored = emulator.objectData('download', 'blob.bin')!;
    stored.writeUInt8(stored[0]! ^ 0xff, 0);
    await expect(file.download()).rejects.toMatchObject({ code: 'CONTENT_DOWNLOAD_MISMATCH' });
  });

  it('deletes, then answers 404 in the JSON API error shape', async () => {
    const file = storage.bucket('delete').file('gone');
    await file.save('bye', { resumable: false });
    await file.delete();
    expect(emulator.objectNames('delete')).toEqual([]);

    const error = await file.getMetadata().catch((e: unknown) => e);
    expect(error).toMatchObject({
      code: 404,
      message: 'No such object: delete/gone',
      errors: [{ message: 'No such object: delete/gone', domain: 'global', reason: 'notFound' }],
    });
    await expect(file.delete()).rejects.toMatchObject({ code: 404 });
    await expect(file.download()).rejects.toMatchObject({ code: 404 });
  });

  it('honours generation preconditions', async () => {
    const file = storage.bucket('conditions').file('once');
    await file.save('first', { resumable: false, preconditionOpts: { ifGenerationMatch: 0 } });
    await expect(file.save('second', { resumable: false, preconditionOpts: { ifGenerationMatch: 0 } })).rejects.toMatchObject({
      code: 412,
    });
    expect(emulator.objectData('conditions', 'once')?.toString()).toBe('first');
  });

  describe('listing', () => {
    const names = ['a/1', 'a/2', 'a/b/3', 'b/4', 'c', 'd'];

    beforeAll(async () => {
      for (const name of names) await storage.bucket('list').file(name).save(name, { resumable: false });
    });

    it('filters by prefix, in name order', async () => {
      const [files] = await storage.bucket('list').getFiles({ prefix: 'a/' });
      expect(files.map((f) => f.name)).toEqual(['a/1', 'a/2', 'a/b/3']);
      expect(files[0]!.metadata.size).toBe('3');
    });

    it('rolls names up to prefixes at the delimiter', async () => {
      const [files, , response] = await storage.bucket('list').getFiles({ delimiter: '/', autoPaginate: false });
      expect(files.map((f) => f.name)).toEqual(['c', 'd']);
      expect(response).toMatchObject({ kind: 'storage#objects', prefixes: ['a/', 'b/'] });

      const [nested, , nestedResponse] = await storage.bucket('list').getFiles({ prefix: 'a/', delimiter: '/', autoPaginate: false });
      expect(nested.map((f) => f.name)).toEqual(['a/1', 'a/2']);
      expect(nestedResponse).toMatchObject({ prefixes: ['a/b/'] });
    });

    it('pages with maxResults and pageToken', async () => {
      const pages: string[][] = [];
      let query: object | null = { maxResults: 4, autoPaginate: false };
      while (query) {
        const [files, next]: [Array<{ name: string }>, object | null, unknown] = await storage.bucket('list').getFiles(query);
        pages.push(files.map((f) => f.name));
        query = next;
      }
      expect(pages).toEqual([['a/1', 'a/2', 'a/b/3', 'b/4'], ['c', 'd']]);

      // Prefixes count against maxResults too.
      const [first, next, response] = await storage.bucket('list').getFiles({ delimiter: '/', maxResults: 2, autoPaginate: false });
      expect([first.length, response]).toEqual([0, expect.objectContaining({ prefixes: ['a/', 'b/'] })]);
      const [second, last] = await storage.bucket('list').getFiles(next!);
      expect([second.map((f) => f.name), last]).toEqual([['c', 'd'], null]);
    });

    it('lists everything when paginating automatically, and nothing for an unknown bucket', async () => {
      const [files] = await storage.bucket('list').getFiles({ maxResults: 1 });
      expect(files).toHaveLength(1);
      const [all] = await storage.bucket('list').getFiles();
      expect(all.map((f) => f.name)).toEqual(names);
      expect((await storage.bucket('nothing-here').getFiles())[0]).toEqual([]);
    });
  });

  it('creates buckets explicitly or on first write', async () => {
    expect(await storage.bucket('made').exists()).toEqual([false]);
    emulator.createBucket('made');
    expect(await storage.bucket('made').exists()).toEqual([true]);
    await storage.createBucket('via-sdk');
    expect(await storage.bucket('via-sdk').exists()).toEqual([true]);
    await expect(storage.createBucket('via-sdk')).rejects.toMatchObject({ code: 409 });
    expect(await storage.bucket('simple').exists()).toEqual([true]);
  });
});

describe('cloud3 from the command line', () => {
  it('starts with --listen and stops', async () => {
    let printed = '';
    const running = await runCli(['cloud3', '--listen', '127.0.0.1:0'], { write: (t: string) => (printed += t) });
    expect(running).toBeDefined();
    try {
      const apiEndpoint = /apiEndpoint: (\S+)/.exec(printed)![1]!;
      const cli = new Storage({ apiEndpoint, projectId: 'test-project' });
      await cli.bucket('b').file('f').save('x', { resumable: false });
      expect((await cli.bucket('b').file('f').download())[0].toString()).toBe('x');
    } finally {
      await running!.stop();
    }
  });
});
