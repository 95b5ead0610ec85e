/**
 * Bytes decoded per piece: as one-byte text (ASCII, Latin-1) a piece stays under V8's
 * large-object size (128 KiB), and any piece far under node's external-string size. Pieces of
 * 32 KiB, under that size even as two-byte text, cost a batch more in runs side by side.
 */
const PIECE_BYTES = 64 * 1024;

/**
 * `raw.toString('utf8')`, for a large body decoded in pieces of 64 KiB that V8 joins.
 *
 * Node hands back a text of more than about 1 MB as an external string, whose bytes live outside
 * V8's heap and count as external memory until a collection finds the string dead. A transit
 * batch of 1,000 items is a 1.4 MB body: four clients sending batches pushed the external memory
 * past V8's threshold every 20 batches or so, each time starting a full collection of the
 * whole heap. Pieces are ordinary strings, and what JSON.parse makes of them lives in the heap.
 *
 * A piece ends before the lead byte of the character its last byte belongs to, stepping back
 * over at most three continuation bytes (0x80-0xBF), so no valid character is cut. Where four
 * continuation bytes run, none of them past the first three can belong to a character, and
 * the cut stays where it was. Either way no maximal invalid subpart spans a cut, so an invalid
 * sequence is replaced as it is when the whole is decoded.
 */
export function utf8Text(raw: Buffer): string {
  if (raw.length <= PIECE_BYTES) return raw.toString('utf8');
  let text = '';
  let from = 0;
  while (from < raw.length) {
    const end = Math.min(raw.length, from + PIECE_BYTES);
    let to = end;
    while (to > end - 3 && to < raw.length && continues(raw[to] as number)) to--;
    if (to < raw.length && continues(raw[to] as number)) to = end;
    text += raw.toString('utf8', from, to);
    from = to;
  }
  return text;
}

function continues(byte: number): boolean {
  return (byte & 0xc0) === 0x80;
}
