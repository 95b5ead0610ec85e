/**
 * Just enough DER to handle the structures node:crypto will not build or take apart for us:
 * ECDSA {r, s} signatures for digests we sign ourselves, PKCS#1 v1.5 DigestInfo, and the
 * PKCS#8 wrapper around RSA-PSS keys. Parsing is strict (definite, minimal lengths) because
 * a signature that only parses leniently must not verify.
 */

export interface DerElement {
  tag: number;
  /** Content octets only. */
  value: Buffer;
  /** Offset just past this element in the buffer it was read from. */
  end: number;
}

export class DerError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DerError';
  }
}

export const TAG_INTEGER = 0x02;
export const TAG_BIT_STRING = 0x03;
export const TAG_OCTET_STRING = 0x04;
export const TAG_NULL = 0x05;
export const TAG_OID = 0x06;
export const TAG_SEQUENCE = 0x30;

export function readElement(buf: Buffer, offset = 0): DerElement {
  if (offset + 2 > buf.length) throw new DerError('truncated DER element');
  const tag = buf[offset]!;
  // Multi-byte tags never occur in the structures handled here.
  if ((tag & 0x1f) === 0x1f) throw new DerError('unsupported DER tag');
  let pos = offset + 1;
  const first = buf[pos++]!;
  let length: number;
  if (first < 0x80) {
    length = first;
  } else {
    const count = first & 0x7f;
    if (count === 0) throw new DerError('indefinite length is not DER');
    if (count > 4) throw new DerError('DER length too large');
    if (pos + count > buf.length) throw new DerError('truncated DER length');
    if (buf[pos] === 0) throw new DerError('DER length not minimally encoded');
    length = 0;
    for (let i = 0; i < count; i++) length = length * 256 + buf[pos++]!;
    if (length < 0x80) throw new DerError('DER length not minimally encoded');
  }
  if (pos + length > buf.length) throw new DerError('truncated DER content');
  return { tag, value: buf.subarray(pos, pos + length), end: pos + length };
}

/** Reads one element that must fill `buf` exactly and carry `tag`. */
export function readWhole(buf: Buffer, tag: number): Buffer {
  const el = readElement(buf, 0);
  if (el.tag !== tag) throw new DerError(`expected DER tag 0x${tag.toString(16)}, got 0x${el.tag.toString(16)}`);
  if (el.end !== buf.length) throw new DerError('trailing data after DER element');
  return el.value;
}

/** Splits a constructed value into its children. */
export function readChildren(value: Buffer): DerElement[] {
  const out: DerElement[] = [];
  let offset = 0;
  while (offset < value.length) {
    const el = readElement(value, offset);
    out.push(el);
    offset = el.end;
  }
  return out;
}

/** Two's-complement INTEGER contents to a bigint, refusing non-minimal encodings as DER does. */
export function decodeInteger(value: Buffer): bigint {
  if (value.length === 0) throw new DerError('empty DER integer');
  if (value.length > 1) {
    const a = value[0]!;
    const b = value[1]!;
    if ((a === 0x00 && (b & 0x80) === 0) || (a === 0xff && (b & 0x80) !== 0)) {
      throw new DerError('DER integer not minimally encoded');
    }
  }
  let n = BigInt(`0x${value.toString('hex')}`);
  if ((value[0]! & 0x80) !== 0) n -= 1n << BigInt(value.length * 8);
  return n;
}

function encodeLength(length: number): Buffer {
  if (length < 0x80) return Buffer.from([length]);
  const bytes: number[] = [];
  for (let n = length; n > 0; n = Math.floor(n / 256)) bytes.unshift(n % 256);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

export function encodeElement(tag: number, value: Buffer): Buffer {
  return Buffer.concat([Buffer.from([tag]), encodeLength(value.length), value]);
}

/** Non-negative integers only: that is all ECDSA signatures need. */
export function encodeInteger(n: bigint): Buffer {
  if (n < 0n) throw new RangeError('encodeInteger takes non-negative values');
  let hex = n.toString(16);
  if (hex.length % 2) hex = `0${hex}`;
  let bytes = Buffer.from(hex, 'hex');
  if ((bytes[0]! & 0x80) !== 0) bytes = Buffer.concat([Buffer.from([0]), bytes]);
  return encodeElement(TAG_INTEGER, bytes);
}

export function encodeSequence(...children: Buffer[]): Buffer {
  return encodeElement(TAG_SEQUENCE, Buffer.concat(children));
}

/** Dotted OID text to its DER contents; used to compare against parsed OIDs. */
export function encodeOidValue(dotted: string): Buffer {
  const arcs = dotted.split('.').map((a) => BigInt(a));
  const [first, second, ...rest] = arcs;
  if (first === undefined || second === undefined) throw new RangeError(`bad OID ${dotted}`);
  const out: number[] = [];
  for (const arc of [first * 40n + second, ...rest]) {
    const chunk: number[] = [Number(arc & 0x7fn)];
    for (let v = arc >> 7n; v > 0n; v >>= 7n) chunk.unshift(Number(v & 0x7fn) | 0x80);
    out.push(...chunk);
  }
  return Buffer.from(out);
}

/** Big-endian unsigned bytes to a bigint. */
export function bytesToBigInt(bytes: Buffer): bigint {
  return bytes.length === 0 ? 0n : BigInt(`0x${bytes.toString('hex')}`);
}

/** A non-negative bigint as exactly `width` big-endian bytes. */
export function bigIntToBytes(n: bigint, width: number): Buffer {
  if (n < 0n) throw new RangeError('bigIntToBytes takes non-negative values');
  const hex = n.toString(16).padStart(width * 2, '0');
  if (hex.length > width * 2) throw new RangeError(`value does not fit in ${width} bytes`);
  return Buffer.from(hex, 'hex');
}
