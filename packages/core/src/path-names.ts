/**
 * The one check for names that become part of a request path or a storage key: mount and auth
 * paths (and the `from`/`to` of a remount), audit device paths, policy names, namespace paths
 * and custom token IDs. Each kind adds its own rules on top (a character set, a trailing '/').
 */
import { BadRequestError } from './errors';

/**
 * The most UTF-8 bytes one name may take. A name has to fit, with the rest of the path, in a
 * request line (Node refuses request heads over 16 KiB) and in storage keys and log lines;
 * 256 bytes is far beyond any name people pick and keeps a full path of several names well
 * inside what every client and proxy passes.
 */
export const MAX_NAME_BYTES = 256;

// C0 and C1 controls, DEL and NUL: invisible in logs, cut C strings short, and never in a URL.
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
// In a Unicode-aware pattern a surrogate pair is one code point, so this matches only a lone one.
const LONE_SURROGATE = /\p{Cs}/u;

/**
 * Whether `text` holds a lone UTF-16 surrogate (JSON lets "\ud800" through): no character, and
 * no UTF-8 encoder can write it, so it would come back from a path, a URL or storage as
 * something else.
 */
export function hasLoneSurrogate(text: string): boolean {
  return LONE_SURROGATE.test(text);
}

/**
 * Throws a BadRequestError naming `field` unless `name` is a string of at most MAX_NAME_BYTES,
 * without control characters or lone surrogates, none of whose '/'-separated segments is '.' or
 * '..'. The message never quotes the name, which may be huge or unprintable.
 */
export function checkPathName(field: string, name: unknown): asserts name is string {
  if (typeof name !== 'string') throw new BadRequestError(`invalid value for "${field}": must be a string`);
  const bytes = Buffer.byteLength(name, 'utf8');
  if (bytes > MAX_NAME_BYTES) {
    throw new BadRequestError(`invalid value for "${field}": ${bytes} bytes is longer than the limit of ${MAX_NAME_BYTES}`);
  }
  if (CONTROL.test(name)) {
    throw new BadRequestError(`invalid value for "${field}": must not contain NUL or other control characters`);
  }
  if (hasLoneSurrogate(name)) {
    throw new BadRequestError(`invalid value for "${field}": must be valid Unicode text (it holds a lone surrogate)`);
  }
  if (name.split('/').some((seg) => seg === '.' || seg === '..')) {
    throw new BadRequestError(`invalid value for "${field}": must not contain "." or ".." as a path segment`);
  }
}
