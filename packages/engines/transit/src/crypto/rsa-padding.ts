import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { TAG_NULL, TAG_OCTET_STRING, TAG_OID, encodeElement, encodeOidValue, encodeSequence } from './der';
import { digestOid, digestSize, nodeDigestName, type DigestAlgorithm } from './hashing';

/**
 * RSA signature encodings (RFC 8017) for input that is already a digest. node:crypto hashes
 * before it pads, so a prehashed request is padded here and handed to OpenSSL for the raw RSA
 * operation (privateEncrypt / publicDecrypt without padding), which keeps the private-key
 * arithmetic, and its blinding, inside OpenSSL.
 */

/** DER DigestInfo { AlgorithmIdentifier { oid, NULL }, OCTET STRING digest }. */
export function digestInfo(algorithm: DigestAlgorithm, digest: Buffer): Buffer {
  const algId = encodeSequence(encodeElement(TAG_OID, encodeOidValue(digestOid(algorithm))), encodeElement(TAG_NULL, Buffer.alloc(0)));
  return encodeSequence(algId, encodeElement(TAG_OCTET_STRING, digest));
}

/** EMSA-PKCS1-v1_5 block 00 01 FF… 00 ‖ t, `k` bytes long; undefined if t does not fit. */
export function pkcs1v15Encode(t: Buffer, k: number): Buffer | undefined {
  if (t.length + 11 > k) return undefined;
  return Buffer.concat([Buffer.from([0, 1]), Buffer.alloc(k - t.length - 3, 0xff), Buffer.from([0]), t]);
}

function mgf1(algorithm: DigestAlgorithm, seed: Buffer, length: number): Buffer {
  const out: Buffer[] = [];
  const counter = Buffer.alloc(4);
  let produced = 0;
  for (let i = 0; produced < length; i++) {
    counter.writeUInt32BE(i, 0);
    const block = createHash(nodeDigestName(algorithm)).update(seed).update(counter).digest();
    out.push(block);
    produced += block.length;
  }
  return Buffer.concat(out).subarray(0, length);
}

/** Largest salt EMSA-PSS allows for this modulus and hash. */
export function maxPssSaltLength(modulusBits: number, algorithm: DigestAlgorithm): number {
  return Math.ceil((modulusBits - 1) / 8) - 2 - digestSize(algorithm);
}

function pssHash(algorithm: DigestAlgorithm, mHash: Buffer, salt: Buffer): Buffer {
  return createHash(nodeDigestName(algorithm)).update(Buffer.alloc(8)).update(mHash).update(salt).digest();
}

/**
 * EMSA-PSS-ENCODE, padded on the left to `modulusBits` rounded up to bytes so it can go straight
 * into a raw RSA operation. MGF1 uses the same hash, as Go and OpenSSL do by default.
 */
export function pssEncode(algorithm: DigestAlgorithm, mHash: Buffer, modulusBits: number, saltLength: number): Buffer {
  const hLen = digestSize(algorithm);
  if (mHash.length !== hLen) throw new RangeError('digest length does not match the hash');
  const emBits = modulusBits - 1;
  const emLen = Math.ceil(emBits / 8);
  if (saltLength < 0 || emLen < hLen + saltLength + 2) throw new RangeError('salt length too large for this key');
  const salt = randomBytes(saltLength);
  const h = pssHash(algorithm, mHash, salt);
  const db = Buffer.concat([Buffer.alloc(emLen - saltLength - hLen - 2), Buffer.from([1]), salt]);
  const mask = mgf1(algorithm, h, db.length);
  for (let i = 0; i < db.length; i++) db[i]! ^= mask[i]!;
  db[0]! &= 0xff >> (8 * emLen - emBits);
  const em = Buffer.concat([db, h, Buffer.from([0xbc])]);
  const k = Math.ceil(modulusBits / 8);
  return k > emLen ? Buffer.concat([Buffer.alloc(k - emLen), em]) : em;
}

/**
 * EMSA-PSS-VERIFY on the output of a raw public-key operation (`k` bytes). `saltLength`
 * undefined means detect it from the encoding, as Go's PSSSaltLengthAuto does when verifying.
 */
export function pssVerify(algorithm: DigestAlgorithm, mHash: Buffer, encoded: Buffer, modulusBits: number, saltLength?: number): boolean {
  const hLen = digestSize(algorithm);
  if (mHash.length !== hLen) return false;
  const emBits = modulusBits - 1;
  const emLen = Math.ceil(emBits / 8);
  // When emBits is a multiple of 8 the encoding is one byte shorter than the modulus; that byte must be 0.
  const lead = encoded.length - emLen;
  if (lead < 0 || encoded.subarray(0, lead).some((b) => b !== 0)) return false;
  const em = encoded.subarray(lead);
  if (emLen < hLen + 2 || em[emLen - 1] !== 0xbc) return false;
  const maskedDb = em.subarray(0, emLen - hLen - 1);
  const h = em.subarray(emLen - hLen - 1, emLen - 1);
  const topMask = 0xff >> (8 * emLen - emBits);
  if ((maskedDb[0]! & ~topMask) !== 0) return false;
  const mask = mgf1(algorithm, h, maskedDb.length);
  const db = Buffer.alloc(maskedDb.length);
  for (let i = 0; i < db.length; i++) db[i] = maskedDb[i]! ^ mask[i]!;
  db[0]! &= topMask;
  let sep = 0;
  while (sep < db.length && db[sep] === 0) sep++;
  if (sep >= db.length || db[sep] !== 0x01) return false;
  const salt = db.subarray(sep + 1);
  if (saltLength !== undefined && salt.length !== saltLength) return false;
  const expected = pssHash(algorithm, mHash, salt);
  return timingSafeEqual(expected, h);
}
