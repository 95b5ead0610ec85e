import { randomUUID } from 'node:crypto';
import { jsonTextOf } from '@strongroom/core';

// Where the marked field's text goes: the rest of the body is serialized with this string in the
// field's place, then cut there. Unguessable per process, so no string a client sent can be it.
const SPLICE_MARK = `\u0000${randomUUID()}`;
const SPLICE_MARK_JSON = JSON.stringify(SPLICE_MARK);

/** A reply's JSON in the pieces it is written in, and their length in bytes. */
export interface SplicedJson {
  pieces: string[];
  bytes: number;
}

/**
 * A reply body's JSON: JSON.stringify's string, or, when the body's data marks a field whose
 * JSON text the engine writes itself (core's `withJsonText`), the same text in pieces: what comes
 * before that field, the pieces of text the engine builds now, and what follows. Written one after
 * the other, the pieces are never joined into one string, which for a reply that large would be
 * another copy.
 */
export function jsonReply(body: unknown): string | SplicedJson {
  const data = body !== null && typeof body === 'object' ? (body as { data?: unknown }).data : undefined;
  const marked = jsonTextOf(data);
  if (!marked) return JSON.stringify(body);
  const value = (data as Record<string, unknown>)[marked.field];
  if (value === null || typeof value !== 'object') return JSON.stringify(body);
  const outer = JSON.stringify(body, (_key, v: unknown) => (v === value ? SPLICE_MARK : v));
  const at = outer.indexOf(SPLICE_MARK_JSON);
  // The value twice in the body (or not at all) is left to JSON.stringify.
  if (at === -1 || outer.indexOf(SPLICE_MARK_JSON, at + 1) !== -1) return JSON.stringify(body);
  const head = outer.slice(0, at);
  const tail = outer.slice(at + SPLICE_MARK_JSON.length);
  const { pieces, bytes } = marked.render();
  let size = bytes;
  if (size === undefined) {
    size = 0;
    for (const piece of pieces) size += Buffer.byteLength(piece);
  }
  return { pieces: [head, ...pieces, tail], bytes: Buffer.byteLength(head) + size + Buffer.byteLength(tail) };
}
