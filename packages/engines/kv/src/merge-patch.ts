export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * JSON merge patch (RFC 7396): objects merge key by key, `null` removes a key, anything else
 * (arrays included) replaces. Keys are defined rather than assigned so a `__proto__` key in
 * secret data stays data instead of becoming the object's prototype.
 */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isPlainObject(patch)) return patch;
  const result: Record<string, unknown> = {};
  if (isPlainObject(target)) for (const [k, v] of Object.entries(target)) defineOwn(result, k, v);
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete result[k];
    else defineOwn(result, k, mergePatch(Object.hasOwn(result, k) ? result[k] : undefined, v));
  }
  return result;
}

function defineOwn(obj: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
}
