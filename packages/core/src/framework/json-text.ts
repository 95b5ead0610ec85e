/**
 * A field of a response's data whose JSON text the engine already has: the HTTP layer writes
 * that text into the reply in place of serializing the field again. Everything else that reads
 * the response (audit, response wrapping, a standby's forwarding) sees the field's value as
 * usual and never the text.
 *
 * Large transit batches use it: JSON.stringify of 1,000 results of 1.4 KB each scans every
 * ciphertext for characters to escape, which base64 never has, and builds its output in pieces
 * that must be copied into one string before the socket write copies it again.
 *
 * The text must be exactly what JSON.stringify gives for the field's value, and the value must
 * not change after it is marked.
 */
export interface JsonText {
  field: string;
  text: string;
}

const JSON_TEXT = Symbol('jsonText');

type Marked = Record<string, unknown> & { [JSON_TEXT]?: JsonText };

/** Marks `data[field]` as having the JSON text `text`; answers `data`. */
export function withJsonText<T extends Record<string, unknown>>(data: T, field: keyof T & string, text: string): T {
  (data as Marked)[JSON_TEXT] = { field, text };
  return data;
}

/** The JSON text marked on `data`, when its field still holds a value. */
export function jsonTextOf(data: unknown): JsonText | undefined {
  if (data === null || typeof data !== 'object') return undefined;
  const marked = (data as Marked)[JSON_TEXT];
  return marked !== undefined && (data as Marked)[marked.field] !== undefined ? marked : undefined;
}
