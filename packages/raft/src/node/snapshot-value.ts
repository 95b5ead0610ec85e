import { SnapshotReader } from './snapshot-file';

/**
 * One stored value out of a snapshot stream (as `RaftNode.writeSnapshot` produces), or null when
 * the snapshot lacks the key. Reads the whole stream, so the trailer's checksum is verified too.
 */
export async function snapshotValue(source: AsyncIterable<Uint8Array>, key: string): Promise<Buffer | null> {
  const reader = new SnapshotReader(source);
  await reader.header();
  // Data records are keyed 'd' + the storage key (see the layout in state-machine.ts).
  const wanted = Buffer.from(`d${key}`, 'utf8');
  let found: Buffer | null = null;
  for await (const batch of reader.records()) {
    for (const [k, v] of batch) if (found === null && k.equals(wanted)) found = Buffer.from(v);
  }
  return found;
}
