import { CreateBucketCommand, CreateMultipartUploadCommand, DeleteBucketCommand, GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { BlobServiceClient, StorageSharedKeyCredential } from '@azure/storage-blob';
import { Cloud3StorageEmulator } from '@strongroom/emulators';
import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { SnapshotConfig } from '../config';
import { AZURITE_ACCOUNT, AZURITE_KEY, startAzurite, startFauxqs, type RunningEmulator } from '../test-support/emulators';
import { startCountingProxy } from '../test-support/counting-proxy';
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
function behavesAsATarget(label: string, open: () => SnapshotTarget, read: (key: string) => Promise<string>) {
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
      target.close();
    });
  });
}

describe('cloud writers against emulators', () => {
  let s3: RunningEmulator;
  let azure: RunningEmulator;
  let gcs: Cloud3StorageEmulator;
  const BUCKET = 'snapshots';

  beforeAll(async () => {
    [s3, azure, gcs] = await Promise.all([startFauxqs(), startAzurite(), Cloud3StorageEmulator.start()]);
    gcs.createBucket(BUCKET);
    const client = new S3Client({ region: 'us-east-1', endpoint: s3.url, forcePathStyle: true, credentials: { accessKeyId: 'test', secretAccessKey: 'test' } });
    await client.send(new CreateBucketCommand({ Bucket: BUCKET }));
    client.destroy();
    const blob = new BlobServiceClient(`${azure.url}/${AZURITE_ACCOUNT}`, new StorageSharedKeyCredential(AZURITE_ACCOUNT, AZURITE_KEY));
    await blob.getContainerClient(BUCKET).create();
  }, 60_000);
  afterAll(async () => {
    await Promise.all([s3?.stop(), azure?.stop(), gcs?.close()]);
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
  });

  it('cloud1-objstore aborts the multipart upload of a failed write, so no parts linger', async () => {
    // The emulator refuses to delete a bucket while an upload in it is open; a control shows it.
    const client = s3Client();
    await client.send(new CreateBucketCommand({ Bucket: 'control' }));
    await client.send(new CreateMultipartUploadCommand({ Bucket: 'control', Key: 'left-open' }));
    await expect(client.send(new DeleteBucketCommand({ Bucket: 'control' }))).rejects.toThrow(/not empty/);

    await client.send(new CreateBucketCommand({ Bucket: 'aborts' }));
    const target = openTarget({ ...cloud1(), cloud1_objstore_bucket: 'aborts' } as SnapshotConfig);
    await expect(target.write('service-snapshot-1.snap', failingAfter(17 * MiB), new AbortController().signal)).rejects.toThrow();
    const abort = new AbortController();
    const src = generated(40 * MiB);
    src.stream.on('data', () => { if (src.produced() > 20 * MiB) abort.abort(); });
    await expect(target.write('service-snapshot-2.snap', src.stream, abort.signal)).rejects.toThrow();
    await client.send(new DeleteBucketCommand({ Bucket: 'aborts' }));
    target.close();
    client.destroy();
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

  const cloud3 = (): SnapshotConfig => ({
    ...common, storage_type: 'cloud3-objstore', path_prefix: 'snaps/', cloud3_bucket: BUCKET, cloud3_endpoint: gcs.url, cloud3_disable_tls: true,
  });

  behavesAsATarget('cloud3-objstore (chunked resumable upload)', () => openTarget(cloud3()), async (key) => {
    const data = gcs.objectData(BUCKET, key);
    if (!data) throw new Error(`no object ${key}`);
    return createHash('sha256').update(data).digest('hex');
  });

  it('cloud3-objstore reports an upload the store refuses, and leaves no object', async () => {
    const target = openTarget(cloud3());
    gcs.failNextUploads(1, 403);
    await expect(target.write('service-snapshot-9.snap', generated(1024).stream, new AbortController().signal)).rejects.toThrow();
    expect(gcs.objectNames(BUCKET)).toEqual([]);
  });

  it('cloud2-blob fails with a clear error on a wrong account key', async () => {
    const target = openTarget({ ...cloud2(), cloud2_account_key: Buffer.alloc(64, 1).toString('base64') } as SnapshotConfig);
    await expect(target.write('service-snapshot-9.snap', generated(1024).stream, new AbortController().signal)).rejects.toThrow(/authenticate|signature/i);
  });

  it('cloud1-objstore without keys takes credentials from the SDK\'s own chain (here the environment)', async () => {
    const saved = { ...process.env };
    const { cloud1_access_key_id: _id, cloud1_secret_access_key: _secret, ...keyless } = cloud1() as SnapshotConfig & Record<string, unknown>;
    try {
      process.env['AWS_SHARED_CREDENTIALS_FILE'] = '/nonexistent/credentials';
      process.env['AWS_CONFIG_FILE'] = '/nonexistent/config';
      delete process.env['AWS_ACCESS_KEY_ID'];
      delete process.env['AWS_SECRET_ACCESS_KEY'];
      delete process.env['AWS_PROFILE'];
      const without = openTarget(keyless as SnapshotConfig);
      await expect(without.write('service-snapshot-5.snap', generated(1024).stream, new AbortController().signal)).rejects.toThrow(/credential/i);
      without.close();
      process.env['AWS_ACCESS_KEY_ID'] = 'AKIDFROMENV';
      process.env['AWS_SECRET_ACCESS_KEY'] = 'secret-from-env';
      const withEnv = openTarget(keyless as SnapshotConfig);
      expect(await withEnv.write('service-snapshot-5.snap', generated(1024).stream, new AbortController().signal)).toBe(1024);
      await withEnv.remove('service-snapshot-5.snap');
      withEnv.close();
    } finally {
      for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
      Object.assign(process.env, saved);
    }
  });

  it.each([
    [{ cloud1_objstore_server_side_encryption: true }, ['x-amz-server-side-encryption: AES256']],
    [{ cloud1_objstore_server_side_encryption: false, cloud1_objstore_enable_kms: true }, ['x-amz-server-side-encryption: aws:kms']],
    [{ cloud1_objstore_server_side_encryption: false, cloud1_objstore_enable_kms: true, cloud1_objstore_kms_key: 'alias/snapshots' },
      ['x-amz-server-side-encryption: aws:kms', 'x-amz-server-side-encryption-aws-kms-key-id: alias/snapshots']],
  ])('cloud1-objstore asks for server-side encryption %j', async (settings, headers) => {
    const proxy = await startCountingProxy(s3.url);
    const target = openTarget({ ...cloud1(), ...settings, cloud1_objstore_endpoint: proxy.url } as SnapshotConfig);
    await target.write('service-snapshot-7.snap', generated(9 * MiB).stream, new AbortController().signal);
    await target.remove('service-snapshot-7.snap');
    target.close();
    await proxy.close();
    const sent = proxy.captured().toLowerCase();
    for (const h of headers) expect(sent).toContain(h.toLowerCase());
    if (!('cloud1_objstore_kms_key' in settings)) expect(sent).not.toContain('kms-key-id');
  });

  it('cloud1-objstore reports a missing bucket', async () => {
    const target = openTarget({ ...cloud1(), cloud1_objstore_bucket: 'no-such-bucket' } as SnapshotConfig);
    await expect(target.write('service-snapshot-9.snap', generated(1024).stream, new AbortController().signal)).rejects.toThrow(/bucket/i);
    target.close();
  });
});
