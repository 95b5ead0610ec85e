/** Resumable uploads: through the SDK, and the session protocol spoken directly. */
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { IdempotencyStrategy, Storage } from '@google-cloud/storage';
import { Cloud3StorageEmulator } from './emulator';

let emulator: Cloud3StorageEmulator;
let storage: Storage;

beforeAll(async () => {
  emulator = await Cloud3StorageEmulator.start();
  storage = new Storage({ apiEndpoint: emulator.url, projectId: 'test-project' });
});

afterAll(() => emulator.close());

const MiB = 1024 * 1024;

/** `size` deterministic bytes, produced 64 KiB at a time. */
function source(size: number, seed = 1): { stream: Readable; md5: string } {
  const hash = createHash('md5');
  const pieces: Buffer[] = [];
  for (let at = 0; at < size; at += 64 * 1024) {
    const piece = Buffer.alloc(Math.min(64 * 1024, size - at), (at / 65536 + seed) % 256);
    piece.writeUInt32BE(at, 0);
    hash.update(piece);
    pieces.push(piece);
  }
  return { stream: Readable.from(pieces), md5: hash.digest('base64') };
}

const md5 = (data: Buffer | undefined): string => createHash('md5').update(data ?? '').digest('base64');

describe('cloud3 resumable uploads with the SDK', () => {
  it('takes a 20 MiB stream in one PUT', async () => {
    const { stream, md5: expected } = source(20 * MiB);
    const file = storage.bucket('big').file('snapshots/one.bin');
    const statuses: number[] = [];
    const upload = file.createWriteStream({ resumable: true, metadata: { contentType: 'application/x-snapshot' } });
    upload.on('response', (response: { status: number }) => statuses.push(response.status));
    await pipeline(stream, upload);

    expect(statuses).toEqual([200]);
    expect(md5(emulator.objectData('big', 'snapshots/one.bin'))).toBe(expected);
    const [metadata] = await file.getMetadata();
    expect(metadata).toMatchObject({ size: String(20 * MiB), md5Hash: expected, contentType: 'application/x-snapshot' });
    expect(emulator.openUploads()).toBe(0);
  });

  it('goes chunk by chunk through 308 answers with chunkSize', async () => {
    const { stream, md5: expected } = source(5 * MiB + 1234, 7);
    const statuses: number[] = [];
    const upload = storage.bucket('chunks').file('five').createWriteStream({ resumable: true, chunkSize: 4 * 256 * 1024 });
    upload.on('response', (response: { status: number }) => statuses.push(response.status));
    await pipeline(stream, upload);

    expect(statuses).toEqual([308, 308, 308, 308, 308, 200]);
    expect(md5(emulator.objectData('chunks', 'five'))).toBe(expected);
  });

  it('uploads through save({ resumable: true })', async () => {
    const file = storage.bucket('saved').file('empty');
    await file.save(Buffer.alloc(0), { resumable: true });
    await storage.bucket('saved').file('empty-chunked').save(Buffer.alloc(0), { resumable: true, chunkSize: 256 * 1024 });
    await storage.bucket('saved').file('text').save('hello', { resumable: true, metadata: { metadata: { a: '1' } } });
    expect(emulator.objectData('saved', 'empty')).toEqual(Buffer.alloc(0));
    expect(emulator.objectData('saved', 'empty-chunked')).toEqual(Buffer.alloc(0));
    expect((await storage.bucket('saved').file('text').download())[0].toString()).toBe('hello');
    expect((await storage.bucket('saved').file('text').getMetadata())[0].metadata).toEqual({ a: '1' });
  });

  it('leaves no object when the upload fails', async () => {
    const before = emulator.openUploads();
    const upload = storage.bucket('failing').file('never').createWriteStream({ resumable: true });
    // Once the session exists, fail the PUT that carries the data.
    upload.once('uri', () => emulator.failNextUploads(1, 503));

    await expect(pipeline(Readable.from([Buffer.alloc(1000)]), upload)).rejects.toThrow(/503/);
    expect(emulator.objectNames('failing')).toEqual([]);
    expect(emulator.openUploads()).toBe(before + 1);
  });

  it('leaves no object when the writer is destroyed mid-way', async () => {
    const upload = storage.bucket('abandoned').file('half').createWriteStream({ resumable: true });
    const before = emulator.openUploads();
    upload.on('error', () => undefined);
    upload.write(Buffer.alloc(MiB, 1));
    await new Promise((resolve) => upload.once('progress', resolve));
    upload.destroy();
    await new Promise((resolve) => setTimeout(resolve, 50));

    expect(emulator.objectNames('abandoned')).toEqual([]);
    expect(emulator.openUploads()).toBe(before + 1);
  });

  it('resumes from the offset the session reports after a failed chunk', async () => {
    const retrying = new Storage({
      apiEndpoint: emulator.url,
      projectId: 'test-project',
      retryOptions: { autoRetry: true, maxRetries: 3, maxRetryDelay: 1, idempotencyStrategy: IdempotencyStrategy.RetryAlways },
    });
    const { stream, md5: expected } = source(3 * MiB, 3);
    const upload = retrying.bucket('retry').file('r').createWriteStream({ resumable: true, chunkSize: 1 * MiB });
    upload.once('response', () => emulator.failNextUploads(1, 503));
    await pipeline(stream, upload);

    expect(md5(emulator.objectData('retry', 'r'))).toBe(expected);
  });
});

describe('cloud3 resumable session protocol', () => {
  async function startSession(name: string): Promise<string> {
    const response = await fetch(`${emulator.url}/upload/storage/v1/b/raw/o?uploadType=resumable&name=${name}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-upload-content-type': 'text/plain' },
      body: JSON.stringify({ metadata: { via: 'fetch' } }),
    });
    expect(response.status).toBe(200);
    return response.headers.get('location')!;
  }

  const put = (session: string, range: string, body = ''): Promise<Response> =>
    fetch(session, { method: 'PUT', headers: { 'content-range': range }, body });

  it('answers status queries, skips resent bytes and refuses gaps', async () => {
    const session = await startSession('pieces');
    expect(session.startsWith(`${emulator.url}/upload/storage/v1/b/raw/o?`)).toBe(true);

    let response = await put(session, 'bytes */*');
    expect([response.status, response.headers.get('range')]).toEqual([308, null]);
    response = await put(session, 'bytes 0-9/*', '0123456789');
    expect([response.status, response.headers.get('range')]).toEqual([308, 'bytes=0-9']);
    response = await put(session, 'bytes 0-9/*', '0123456789');
    expect([response.status, response.headers.get('range')]).toEqual([308, 'bytes=0-9']);
    response = await put(session, 'bytes 15-19/*', 'fghij');
    expect(response.status).toBe(400);
    response = await put(session, 'bytes */20');
    expect([response.status, response.headers.get('range')]).toEqual([308, 'bytes=0-9']);

    response = await put(session, 'bytes 5-19/20', '56789abcdefghij');
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ name: 'pieces', size: '20', contentType: 'text/plain', metadata: { via: 'fetch' } });
    expect(emulator.objectData('raw', 'pieces')?.toString()).toBe('0123456789abcdefghij');

    response = await put(session, 'bytes */*');
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ name: 'pieces', size: '20' });
  });

  it('checks a final x-goog-hash and keeps the session open when it does not match', async () => {
    const session = await startSession('hashed');
    const response = await fetch(session, {
      method: 'PUT',
      headers: { 'content-range': 'bytes 0-4/5', 'x-goog-hash': `md5=${md5(Buffer.from('other'))}` },
      body: 'hello',
    });
    expect(response.status).toBe(400);
    expect(emulator.objectNames('raw')).not.toContain('hashed');
    expect((await put(session, 'bytes */5')).status).toBe(200);
  });
});
