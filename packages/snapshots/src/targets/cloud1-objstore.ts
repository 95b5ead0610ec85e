import type * as S3 from '@aws-sdk/client-s3';
import type * as S3Upload from '@aws-sdk/lib-storage';
import type { Readable } from 'node:stream';
import { endpointUrl, type Cloud1Settings } from '../config';
import { counted, objectKey, type SnapshotTarget, type StoredSnapshot } from './target';

// The SDKs are loaded when a snapshot first goes to this kind of target, not when a server
// starts: most servers never use it, and loading them is a good part of a start's time.
const s3 = (): typeof S3 => require('@aws-sdk/client-s3') as typeof S3;
const s3Upload = (): typeof S3Upload => require('@aws-sdk/lib-storage') as typeof S3Upload;

/** Multipart parts of 8 MiB, two in flight: memory stays bounded whatever the snapshot's size. */
const PART_SIZE = 8 * 1024 * 1024;
const QUEUE_SIZE = 2;

/**
 * Snapshots as objects in a cloud1 (S3 API) bucket, uploaded as a multipart upload: the object
 * exists only once the upload completes, and a failed one is aborted so no parts linger.
 */
export class Cloud1ObjstoreTarget implements SnapshotTarget {
  private readonly client: S3.S3Client;
  private readonly base: string;

  constructor(private readonly prefix: string, private readonly filePrefix: string, private readonly s: Cloud1Settings) {
    const endpoint = s.cloud1_objstore_endpoint ? endpointUrl(s.cloud1_objstore_endpoint, s.cloud1_objstore_disable_tls) : undefined;
    const { S3Client } = s3();
    this.client = new S3Client({
      region: s.cloud1_objstore_region,
      forcePathStyle: s.cloud1_objstore_force_path_style,
      ...(endpoint ? { endpoint } : {}),
      // Left out, the SDK's own chain applies (environment, shared files, instance role).
      ...(s.cloud1_access_key_id && s.cloud1_secret_access_key
        ? {
            credentials: {
              accessKeyId: s.cloud1_access_key_id, secretAccessKey: s.cloud1_secret_access_key,
              ...(s.cloud1_session_token ? { sessionToken: s.cloud1_session_token } : {}),
            },
          }
        : {}),
      maxAttempts: 3,
    });
    const bucket = s.cloud1_objstore_bucket;
    if (endpoint) this.base = s.cloud1_objstore_force_path_style ? `${endpoint.replace(/\/+$/, '')}/${bucket}` : withBucketHost(endpoint, bucket);
    else this.base = `https://${bucket}.s3.${s.cloud1_objstore_region}.amazonaws.com`;
  }

  url(name: string): string {
    return `${this.base}/${objectKey(this.prefix, name)}`;
  }

  async write(name: string, data: Readable, signal: AbortSignal): Promise<number> {
    const counter = counted(data);
    const params: S3.PutObjectCommandInput = {
      Bucket: this.s.cloud1_objstore_bucket, Key: objectKey(this.prefix, name), Body: counter,
      ContentType: 'application/octet-stream',
    };
    if (this.s.cloud1_objstore_server_side_encryption) params.ServerSideEncryption = 'AES256';
    if (this.s.cloud1_objstore_enable_kms) {
      params.ServerSideEncryption = 'aws:kms';
      if (this.s.cloud1_objstore_kms_key) params.SSEKMSKeyId = this.s.cloud1_objstore_kms_key;
    }
    const { Upload } = s3Upload();
    const upload = new Upload({ client: this.client, params, partSize: PART_SIZE, queueSize: QUEUE_SIZE, leavePartsOnError: false });
    // Failing the body, rather than Upload.abort(), is what makes the SDK abort the multipart
    // upload before done() settles: abort() settles at once and leaves the upload open.
    const abort = (): void => void counter.destroy(Object.assign(new Error('the snapshot was aborted'), { name: 'AbortError' }));
    if (signal.aborted) abort();
    signal.addEventListener('abort', abort, { once: true });
    try {
      await upload.done();
    } catch (err) {
      data.destroy();
      throw err;
    } finally {
      signal.removeEventListener('abort', abort);
    }
    return counter.bytes;
  }

  async list(): Promise<StoredSnapshot[]> {
    const dir = objectKey(this.prefix, '');
    const out: StoredSnapshot[] = [];
    let token: string | undefined;
    do {
      const page = await this.client.send(new (s3().ListObjectsV2Command)({
        Bucket: this.s.cloud1_objstore_bucket, Prefix: dir + this.filePrefix, ...(token ? { ContinuationToken: token } : {}),
      }));
      for (const o of page.Contents ?? []) {
        if (o.Key) out.push({ name: o.Key.slice(dir.length), size: o.Size ?? 0 });
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return out;
  }

  async remove(name: string): Promise<void> {
    await this.client.send(new (s3().DeleteObjectCommand)({ Bucket: this.s.cloud1_objstore_bucket, Key: objectKey(this.prefix, name) }));
  }

  close(): void {
    this.client.destroy();
  }
}

function withBucketHost(endpoint: string, bucket: string): string {
  const url = new URL(endpoint);
  url.hostname = `${bucket}.${url.hostname}`;
  return url.href.replace(/\/+$/, '');
}
