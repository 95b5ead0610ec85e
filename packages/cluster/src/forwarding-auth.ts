import { createHmac, createSecretKey, timingSafeEqual, type KeyObject } from 'node:crypto';

/**
 * A standby that hands a request to the active node over HTTP (the requests whose bodies stream)
 * passes the client's address in this header, since the active node must still see it (bound
 * CIDRs, audit). It is signed with a key every member holds and nobody else does; a header that
 * does not verify is ignored, never trusted.
 */
export const FORWARDED_HEADER = 'x-strongroom-forwarded-for';

/** How long a signed header stays valid: long enough for a slow forward, short for a replay. */
const MAX_AGE_MS = 60_000;

export class ForwardingAuth {
  /** Kept as a KeyObject: node 24 checks a raw key's type on every HMAC at several times its cost. */
  private readonly key: KeyObject;

  constructor(key: Buffer, private readonly now: () => number = Date.now) {
    this.key = createSecretKey(key);
  }

  private mac(address: string, method: string, url: string, at: number): Buffer {
    return createHmac('sha256', this.key).update(`${address}\n${method}\n${url}\n${at}`).digest();
  }

  sign(address: string, method: string, url: string): string {
    const at = this.now();
    return `${address};${at};${this.mac(address, method, url, at).toString('base64url')}`;
  }

  /** The client address the header vouches for, or null if it does not verify. */
  verify(header: string, method: string, url: string): string | null {
    const [address, atText, macText, ...rest] = header.split(';');
    if (address === undefined || atText === undefined || macText === undefined || rest.length > 0) return null;
    const at = Number(atText);
    if (!Number.isSafeInteger(at) || Math.abs(this.now() - at) > MAX_AGE_MS) return null;
    const given = Buffer.from(macText, 'base64url');
    const expected = this.mac(address, method, url, at);
    return given.length === expected.length && timingSafeEqual(given, expected) ? address : null;
  }
}
