/**
 * A field's JSON text, in pieces written one after the other, with its length in UTF-8 when the
 * engine knows it (which spares the writer a scan of it).
 */
export interface JsonTextValue {
  pieces: readonly string[];
  bytes?: number;
}

/**
 * A field of a response's data whose JSON text the engine can write itself: the HTTP layer writes
 * that text into the reply in place of serializing the field again. Everything else that reads
 * the response (audit, response wrapping, a standby's forwarding) sees the field's value as
 * usual and never the text.
 *
 * Large transit batches use it: JSON.stringify of 1,000 results of 1.4 KB each scans every
 * ciphertext for characters to escape, which base64 never has, and builds its output in pieces
 * that must be copied into one string before the socket write copies it again.
 *
 * The text built must be exactly what JSON.stringify gives for the field's value, and the value
 * must not change after it is marked.
 */
export interface JsonText {
  field: string;
  /**
   * Builds the text, as the reply is written: a large text (1.5 MB for a batch of 1,000) is not
   * held across the rest of the request's pipeline, and a reply that is never written as it is
   * (wrapped, or answered through a standby) never builds it.
   */
  render(): JsonTextValue;
}

const JSON_TEXT = Symbol('jsonText');

interface Mark extends JsonText {
  value: unknown;
}

type Marked = Record<string, unknown> & { [JSON_TEXT]?: Mark };

/** Marks `data[field]` as having the JSON text that `render` builds; answers `data`. */
export function withJsonText<T extends Record<string, unknown>>(data: T, field: keyof T & string, render: () => JsonTextValue): T {
  const mark: Mark = { field, render, value: data[field] };
  // Not enumerable, so a copy of the data made by spreading it does not carry the mark along.
  Object.defineProperty(data, JSON_TEXT, { value: mark, enumerable: false, configurable: true, writable: true });
  return data;
}

/** The JSON text marked on `data`, while its field still holds the value it was marked with. */
export function jsonTextOf(data: unknown): JsonText | undefined {
  if (data === null || typeof data !== 'object') return undefined;
  const mark = (data as Marked)[JSON_TEXT];
  return mark !== undefined && mark.value !== undefined && (data as Marked)[mark.field] === mark.value ? mark : undefined;
}
