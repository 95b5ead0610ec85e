/**
 * CRC32C (Castagnoli), the checksum GCS reports in `crc32c` and `x-goog-hash`. Node 20's zlib has
 * no crc32c, so this is the classic byte-wise table over the reflected polynomial.
 */
const TABLE = new Uint32Array(256);
for (let n = 0; n < 256; n++) {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
  TABLE[n] = c;
}

/** The checksum of `data`; pass a previous result to continue it over a further piece. */
export function crc32c(data: Uint8Array, previous = 0): number {
  let crc = ~previous;
  for (let i = 0; i < data.length; i++) crc = TABLE[(crc ^ data[i]!) & 0xff]! ^ (crc >>> 8);
  return ~crc >>> 0;
}

/** The wire form: base64 of the four big-endian bytes. */
export function crc32cBase64(data: Uint8Array): string {
  const bytes = Buffer.alloc(4);
  bytes.writeUInt32BE(crc32c(data));
  return bytes.toString('base64');
}
