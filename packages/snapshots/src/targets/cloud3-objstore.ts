import type * as Gcs from '@google-cloud/storage';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { endpointUrl, type Cloud3Settings } from '../config';
import { ByteCounter, objectKey, type SnapshotTarget, type StoredSnapshot } from './target';

// Loaded when a snapshot first goes to this kind of target, not when a server starts.
const gcs = (): typeof Gcs => require('@google-cloud/storage') as typeof Gcs;

/** Resumable upload in 8 MiB chunks: bounded memory, and a failed chunk is retried alone. */
const CHUNK_SIZE = 8 * 1024 * 1024;

/**
 * Snapshots as objects in a cloud3 bucket, sent as a resumable upload: the object is created
 * only when the last chunk is accepted, so an interrupted upload leaves no object.
 */
export class Cloud3ObjstoreTarget implements SnapshotTarget {
  private readonly bucket: Gcs.Bucket;
  private readonly base: string;

  constructor(private readonly prefix: string, private readonly filePrefix: string, s: Cloud3Settings) {
    const endpoint = s.cloud3_endpoint ? endpointUrl(s.cloud3_endpoint, s.cloud3_disable_tls).replace(/\/+$/, '') : undefined;
    const key = s.cloud3_service_account_key ? (JSON.parse(s.cloud3_service_account_key) as Record<string, string>) : undefined;
    // Without a key, the SDK's own chain applies (GOOGLE_APPLICATION_CREDENTIALS and the like).
    const { Storage } = gcs();
    const storage = new Storage({
      ...(endpoint ? { apiEndpoint: endpoint } : {}),
      ...(key ? { credentials: { client_email: key['client_email'], private_key: key['private_key'] } } : {}),
      ...(key?.['project_id'] ? { projectId: key['project_id'] } : {}),
      retryOptions: { autoRetry: true, maxRetries: 3 },
    });
    this.bucket = storage.bucket(s.cloud3_bucket);
    this.base = `${endpoint ?? 'https://storage.googleapis.com'}/${s.cloud3_bucket}`;
  }

  url(name: string): string {
    return `${this.base}/${objectKey(this.prefix, name)}`;
  }

  async write(name: string, data: Readable, signal: AbortSignal): Promise<number> {
    const counter = new ByteCounter();
    const upload = this.bucket.file(objectKey(this.prefix, name)).createWriteStream({
      resumable: true, chunkSize: CHUNK_SIZE, contentType: 'application/octet-stream', validation: 'crc32c',
    });
    await pipeline(data, counter, upload, { signal });
    return counter.bytes;
  }

  async list(): Promise<StoredSnapshot[]> {
    const dir = objectKey(this.prefix, '');
    const [files] = await this.bucket.getFiles({ prefix: dir + this.filePrefix, autoPaginate: true });
    return files.map((f) => ({ name: f.name.slice(dir.length), size: Number(f.metadata.size ?? 0) }));
  }

  async remove(name: string): Promise<void> {
    await this.bucket.file(objectKey(this.prefix, name)).delete({ ignoreNotFound: true });
  }

  close(): void {}
}
