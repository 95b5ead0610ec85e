import type * as AzureBlob from '@azure/storage-blob';
import type { Readable } from 'node:stream';
import { CLOUD2_ENVIRONMENTS, endpointUrl, type Cloud2Settings } from '../config';
import { counted, objectKey, type SnapshotTarget, type StoredSnapshot } from './target';

// Loaded when a snapshot first goes to this kind of target, not when a server starts.
const blob = (): typeof AzureBlob => require('@azure/storage-blob') as typeof AzureBlob;

/** Blocks of 4 MiB, two in flight: memory stays bounded whatever the snapshot's size. */
const BLOCK_SIZE = 4 * 1024 * 1024;
const CONCURRENCY = 2;

/**
 * Snapshots as block blobs in a cloud2 container. Blocks stay uncommitted (invisible) until the
 * block list is committed at the end, so a failed upload never shows as a blob.
 */
export class Cloud2BlobTarget implements SnapshotTarget {
  private readonly container: AzureBlob.ContainerClient;

  constructor(private readonly prefix: string, private readonly filePrefix: string, s: Cloud2Settings) {
    const service = s.cloud2_endpoint
      ? endpointUrl(s.cloud2_endpoint, false)
      : `https://${s.cloud2_account_name}.${CLOUD2_ENVIRONMENTS[s.cloud2_blob_environment ?? 'AzurePublicCloud']}`;
    const { BlobServiceClient, StorageSharedKeyCredential } = blob();
    const client = new BlobServiceClient(service, new StorageSharedKeyCredential(s.cloud2_account_name, s.cloud2_account_key), {
      retryOptions: { maxTries: 3 },
    });
    this.container = client.getContainerClient(s.cloud2_container_name);
  }

  url(name: string): string {
    return this.container.getBlockBlobClient(objectKey(this.prefix, name)).url;
  }

  async write(name: string, data: Readable, signal: AbortSignal): Promise<number> {
    const counter = counted(data);
    try {
      await this.container.getBlockBlobClient(objectKey(this.prefix, name)).uploadStream(counter, BLOCK_SIZE, CONCURRENCY, {
        abortSignal: signal, blobHTTPHeaders: { blobContentType: 'application/octet-stream' },
      });
    } catch (err) {
      data.destroy();
      throw err;
    }
    return counter.bytes;
  }

  async list(): Promise<StoredSnapshot[]> {
    const dir = objectKey(this.prefix, '');
    const out: StoredSnapshot[] = [];
    for await (const item of this.container.listBlobsFlat({ prefix: dir + this.filePrefix })) {
      out.push({ name: item.name.slice(dir.length), size: item.properties.contentLength ?? 0 });
    }
    return out;
  }

  async remove(name: string): Promise<void> {
    await this.container.getBlockBlobClient(objectKey(this.prefix, name)).deleteIfExists();
  }

  close(): void {}
}
