import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';

/** `size` bytes made on demand (never all in memory), and their SHA-256 once read to the end. */
export function generated(size: number, seed = 1): { stream: Readable; digest: () => string; produced: () => number } {
  const hash = createHash('sha256');
  let produced = 0;
  let digest = '';
  const block = Buffer.alloc(64 * 1024);
  for (let i = 0; i < block.length; i++) block[i] = (i * 31 + seed * 17) & 0xff;
  const stream = new Readable({
    read() {
      if (produced >= size) {
        digest = hash.digest('hex');
        this.push(null);
        return;
      }
      const n = Math.min(block.length, size - produced);
      const chunk = Buffer.from(block.subarray(0, n));
      if (n >= 4) chunk.writeUInt32BE(produced >>> 0, 0);
      produced += n;
      hash.update(chunk);
      this.push(chunk);
    },
  });
  return { stream, digest: () => digest, produced: () => produced };
}

/** A stream that sends `before` bytes, then fails, as a snapshot source cut off midway would. */
export function failingAfter(before: number): Readable {
  let sent = 0;
  return new Readable({
    read() {
      if (sent >= before) {
        this.destroy(new Error('the snapshot source failed'));
        return;
      }
      const n = Math.min(64 * 1024, before - sent);
      sent += n;
      this.push(Buffer.alloc(n, 7));
    },
  });
}

export function sha256(data: Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}
