import { CreateBucketCommand, GetObjectCommand, ListMultipartUploadsCommand, S3Client } from '@aws-sdk/client-s3';
import { BlobServiceClient, StorageSharedKeyCredential } from '@azure/storage-blob';
import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { SnapshotConfig } from '../config';
import { AZURITE_ACCOUNT, AZURITE_KEY, startAzurite, startFauxqs, type RunningEmulator } from '../test-support/emulators';
import { failingAfter, generated } from '../test-support/streams';
import { openTarget } from '.';
import type { SnapshotTarget } from './target';

const MiB = 1024 * 1024;

async function digestOf(body: Readable): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of body) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

const common = { name: 'c', interval: 60, retain: 1, file_prefix: 'service-snapshot' };

/**
 * The same behaviour from every cloud writer, against emulators that speak the real wire
 * protocol to the vendors' SDKs: a multi-part upload arrives whole, listing finds it, an upload
 * that fails or is aborted leaves no object, and deletes work.
 */
function behavesAsATarget(label: string, open: () => SnapshotTarget, read: (key: string) => Promise<string>, pending?: () => Promise<number>) {
  describe(label, () => {
    it('streams a snapshot larger than one part and lists and deletes it', async () => {
      const target = open();
      const src = generated(21 * MiB);
      const size = await target.write('service-snapshot-1000.snap', src.stream, new AbortController().signal);
      expect(size).toBe(21 * MiB);
      expect(await read('snaps/service-snapshot-1000.snap')).toBe(src.digest());
      expect(await target.list()).toEqual([{ name: 'service-snapshot-1000.snap', size: 21 * MiB }]);
      await target.remove('service-snapshot-1000.snap');
      expect(await target.list()).toEqual([]);
      target.close();
    });

    it('leaves no object behind when the source fails or the write is aborted', async () => {
      const target = open();
      await expect(target.write('service-snapshot-2000.snap', failingAfter(9 * MiB), new AbortController().signal)).rejects.toThrow();
      const abort = new AbortController();
      const src = generated(40 * MiB);
      src.stream.on('data', () => { if (src.produced() > 10 * MiB) abort.abort(); });
      await expect(target.write('service-snapshot-3000.snap', src.stream, abort.signal)).rejects.toThrow();
      expect(await target.list()).toEqual([]);
      if (pending) expect(await pending()).toBe(0);
      target.close();
    });
  });
}

describe('cloud writers against emulators', () => {
  let s3: RunningEmulator;
  let azure: RunningEmulator;
  const BUCKET = 'snapshots';

  beforeAll(async () => {
    [s3, azure] = await Promise.all([startFauxqs(), startAzurite()]);
    const client = new S3Client({ region: 'us-east-1', endpoint: s3.url, forcePathStyle: true, credentials: { accessKeyId: 'test', secretAccessKey: 'test' } });
    await client.send(new CreateBucketCommand({ Bucket: BUCKET }));
    client.destroy();
    const blob = new BlobServiceClient(`${azure.url}/${AZURITE_ACCOUNT}`, new StorageSharedKeyCredential(AZURITE_ACCOUNT, AZURITE_KEY));
    await blob.getContainerClient(BUCKET).create();
  }, 60_000);
  afterAll(async () => {
    await Promise.all([s3?.stop(), azure?.stop()]);
  });

  const cloud1 = (): SnapshotConfig => ({
    ...common, storage_type: 'cloud1-objstore', path_prefix: 'snaps', cloud1_objstore_bucket: BUCKET, cloud1_objstore_region: 'us-east-1',
    cloud1_access_key_id: 'AKIDTEST', cloud1_secret_access_key: 'secret-test', cloud1_objstore_endpoint: s3.url,
    cloud1_objstore_disable_tls: true, cloud1_objstore_force_path_style: true, cloud1_objstore_enable_kms: false,
    cloud1_objstore_server_side_encryption: true,
  });
  const s3Client = (): S3Client => new S3Client({ region: 'us-east-1', endpoint: s3.url, forcePathStyle: true, credentials: { accessKeyId: 't', secretAccessKey: 't' } });

  behavesAsATarget('cloud1-objstore (S3 API, multipart upload)', () => openTarget(cloud1()), async (key) => {
    const client = s3Client();
    const res = await client.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
    const digest = await digestOf(res.Body as Readable);
    client.destroy();
    return digest;
  }, async () => {
    const client = s3Client();
    const res = await client.send(new ListMultipartUploadsCommand({ Bucket: BUCKET }));
    client.destroy();
    return res.Uploads?.length ?? 0;
  });

  const cloud2 = (): SnapshotConfig => ({
    ...common, storage_type: 'cloud2-blob', path_prefix: 'snaps/', cloud2_container_name: BUCKET, cloud2_account_name: AZURITE_ACCOUNT,
    cloud2_account_key: AZURITE_KEY, cloud2_endpoint: `${azure.url}/${AZURITE_ACCOUNT}`,
  });

  behavesAsATarget('cloud2-blob (block blobs)', () => openTarget(cloud2()), async (key) => {
    const blob = new BlobServiceClient(`${azure.url}/${AZURITE_ACCOUNT}`, new StorageSharedKeyCredential(AZURITE_ACCOUNT, AZURITE_KEY));
    const res = await blob.getContainerClient(BUCKET).getBlobClient(key).download();
    return digestOf(res.readableStreamBody as Readable);
  });

  it('cloud2-blob fails with a clear error on a wrong account key', async () => {
    const target = openTarget({ ...cloud2(), cloud2_account_key: Buffer.alloc(64, 1).toString('base64') } as SnapshotConfig);
    await expect(target.write('service-snapshot-9.snap', generated(1024).stream, new AbortController().signal)).rejects.toThrow(/authenticate|signature/i);
  });

  it('cloud1-objstore reports a missing bucket', async () => {
    const target = openTarget({ ...cloud1(), cloud1_objstore_bucket: 'no-such-bucket' } as SnapshotConfig);
    await expect(target.write('service-snapshot-9.snap', generated(1024).stream, new AbortController().signal)).rejects.toThrow(/bucket/i);
    target.close();
  });
});
