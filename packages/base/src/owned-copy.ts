/**
 * A copy of `bytes` in memory of its own. `Buffer.from` and `Buffer.allocUnsafe` hand out small
 * buffers as slices of a shared pool block (64 KiB on Node 24), and a slice keeps its whole
 * block alive: a long-lived cache of small values made that way can hold dozens of times the
 * bytes it counts. Anything kept for long should hold a copy like this one.
 */
export function ownedCopy(bytes: Uint8Array): Buffer {
  const out = Buffer.allocUnsafeSlow(bytes.length);
  out.set(bytes);
  return out;
}
