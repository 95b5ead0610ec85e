import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { BlobServiceClient, StorageSharedKeyCredential } from '@azure/storage-blob';
import { Cloud3StorageEmulator } from '@strongroom/emulators';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SnapshotConfig } from '../config';
import { AZURITE_ACCOUNT, AZURITE_KEY, startAzurite, startFauxqs, type RunningEmulator } from '../test-support/emulators';
import { startCountingProxy } from '../test-support/counting-proxy';
import { generated } from '../test-support/streams';
import { openTarget } from '.';

const MiB = 1024 * 1024;
const SIZE = 96 * MiB;

/**
 * Memory must not grow with the snapshot: a writer may read the source only a bounded amount
 * ahead of what the destination has taken. Each test samples, while the write runs, the bytes
 * produced by the source minus the bytes that reached the destination (the file's size, or
 * what passed a counting proxy in front of the emulator), and checks the largest gap against
 * the writer's own buffering.
 */
async function maxReadAhead(write: (src: ReturnType<typeof generated>) => Promise<number>, landed: () => Promise<number>): Promise<number> {
  const src = generated(SIZE);
  let max = 0;
  let done = false;
  const sampler = (async () => {
    while (!done) {
      const before = src.produced();
      const held = await landed().catch(() => 0);
      max = Math.max(max, before - held);
      await new Promise((r) => setTimeout(r, 15));
    }
  })();
  const size = await write(src).finally(() => { done = true; });
  await sampler;
  expect(size).toBe(SIZE);
  return max;
}

const common = { name: 'm', interval: 60, retain: 1, file_prefix: 'service-snapshot' };

describe('writers stream: the source is read only a bounded amount ahead of the destination', () => {
  let s3: RunningEmulator;
  let azure: RunningEmulator;
  let gcs: Cloud3StorageEmulator;
  let dir: string;

  beforeAll(async () => {
    [s3, azure, gcs] = await Promise.all([startFauxqs(), startAzurite(), Cloud3StorageEmulator.start()]);
    dir = mkdtempSync(join(tmpdir(), 'snapshot-stream-'));
  }, 60_000);
  afterAll(async () => {
    await Promise.all([s3?.stop(), azure?.stop(), gcs?.close()]);
    rmSync(dir, { recursive: true, force: true });
  });

  it('local', async () => {
    const target = openTarget({ ...common, storage_type: 'local', path_prefix: dir, local_max_space: 10 * SIZE } as SnapshotConfig);
    const max = await maxReadAhead((src) => target.write('service-snapshot-1.snap', src.stream, new AbortController().signal), async () => {
      const temp = readdirSync(dir).find((f) => f.endsWith('.partial'));
      return temp ? statSync(join(dir, temp)).size : Infinity;
    });
    expect(max).toBeLessThan(4 * MiB);
  });

  it('cloud1-objstore: at most the parts in flight', async () => {
    const client = new S3Client({ region: 'us-east-1', endpoint: s3.url, forcePathStyle: true, credentials: { accessKeyId: 't', secretAccessKey: 't' } });
    await client.send(new CreateBucketCommand({ Bucket: 'stream' }));
    const proxy = await startCountingProxy(s3.url);
    const target = openTarget({
      ...common, storage_type: 'cloud1-objstore', path_prefix: '', cloud1_objstore_bucket: 'stream', cloud1_objstore_region: 'us-east-1',
      cloud1_objstore_endpoint: proxy.url, cloud1_objstore_disable_tls: true, cloud1_objstore_force_path_style: true,
      cloud1_access_key_id: 't', cloud1_secret_access_key: 't',
    } as SnapshotConfig);
    const max = await maxReadAhead((src) => target.write('service-snapshot-1.snap', src.stream, new AbortController().signal), async () => proxy.sent());
    await proxy.close();
    // Two 8 MiB parts in flight, one being filled, and stream buffers.
    expect(max).toBeLessThan(32 * MiB);
    target.close();
    client.destroy();
  });

  it('cloud2-blob: at most the blocks in flight', async () => {
    const service = new BlobServiceClient(`${azure.url}/${AZURITE_ACCOUNT}`, new StorageSharedKeyCredential(AZURITE_ACCOUNT, AZURITE_KEY));
    await service.getContainerClient('stream').create();
    // Azurite lists no blocks of a blob never committed, so count what reaches it instead.
    const proxy = await startCountingProxy(azure.url);
    const target = openTarget({
      ...common, storage_type: 'cloud2-blob', path_prefix: 'x/', cloud2_container_name: 'stream', cloud2_account_name: AZURITE_ACCOUNT,
      cloud2_account_key: AZURITE_KEY, cloud2_endpoint: `${proxy.url}/${AZURITE_ACCOUNT}`,
    } as SnapshotConfig);
    const max = await maxReadAhead((src) => target.write('service-snapshot-1.snap', src.stream, new AbortController().signal), async () => proxy.sent());
    await proxy.close();
    // Two 4 MiB blocks in flight, one being filled, and stream buffers.
    expect(max).toBeLessThan(24 * MiB);
  });

  it('cloud3-objstore: at most the chunk being sent', async () => {
    const proxy = await startCountingProxy(gcs.url);
    const target = openTarget({
      ...common, storage_type: 'cloud3-objstore', path_prefix: 'x/', cloud3_bucket: 'stream', cloud3_endpoint: proxy.url, cloud3_disable_tls: true,
    } as SnapshotConfig);
    const max = await maxReadAhead((src) => target.write('service-snapshot-1.snap', src.stream, new AbortController().signal), async () => proxy.sent());
    await proxy.close();
    expect(gcs.objectNames('stream')).toEqual(['x/service-snapshot-1.snap']);
    // One 8 MiB chunk buffered for its PUT (kept until acknowledged, for a retry), and stream buffers.
    expect(max).toBeLessThan(24 * MiB);
  });
});
