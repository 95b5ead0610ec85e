import {
  BadRequestError, StrongroomError, convertField, withJsonText, type JsonTextValue,
  type BackendResponse, type FieldData, type FieldSchema, type Logger,
} from '@strongroom/core';

export type BatchItem = Record<string, unknown>;

/**
 * `batch_input` as a list of objects, or null when the request has none. A shape error fails
 * the whole request: there is no item to attach it to.
 */
export function parseBatchInput(fields: FieldData): BatchItem[] | null {
  if (!fields.has('batch_input')) return null;
  const raw = fields.get('batch_input');
  if (!Array.isArray(raw)) throw new BadRequestError('invalid value for "batch_input": expected a list of objects');
  if (raw.length === 0) throw new BadRequestError('invalid value for "batch_input": missing batch input to process');
  return raw.map((item, i) => {
    if (item === null || typeof item !== 'object' || Array.isArray(item)) {
      throw new BadRequestError(`invalid value for "batch_input[${i}]": expected an object`);
    }
    return item as BatchItem;
  });
}

const STRING: FieldSchema = { type: 'string' };
const INT: FieldSchema = { type: 'int' };

/** A string member of an item; a value of the wrong type fails the request naming the item. */
export function itemString(item: BatchItem, index: number, name: string): string {
  const value = item[name];
  if (value === undefined || value === null) return '';
  // The common case; the field's name is only worth building for a conversion or an error.
  if (typeof value === 'string') return value;
  return convertField(`batch_input[${index}].${name}`, STRING, value) as string;
}

export function itemInt(item: BatchItem, index: number, name: string): number {
  const value = item[name];
  if (value === undefined || value === null || value === '') return 0;
  if (typeof value === 'number' && Number.isSafeInteger(value)) return value;
  return convertField(`batch_input[${index}].${name}`, INT, value) as number;
}

/** One item's outcome: its result members, or the error that replaced them. */
export type ItemOutcome = { ok: Record<string, unknown> } | { error: unknown };

/**
 * Runs `work` on every item in order, turning an item's failure into that item's `error`
 * rather than the request's. A failure that is not a StrongroomError is ours, not the
 * caller's: it counts as internal and its text is not shown. Work that answers at once is not
 * awaited, so a batch of in-memory operations does not pay a turn of the event loop per item.
 */
export async function runItems<T>(
  items: readonly T[], work: (item: T, index: number) => Record<string, unknown> | Promise<Record<string, unknown>>,
): Promise<ItemOutcome[]> {
  const out: ItemOutcome[] = [];
  for (let i = 0; i < items.length; i++) {
    try {
      const result = work(items[i] as T, i);
      out.push({ ok: result instanceof Promise ? await result : result });
    } catch (error) {
      out.push({ error });
    }
  }
  return out;
}

function isUserError(err: unknown): boolean {
  return err instanceof StrongroomError && err.status < 500;
}

/** The partial_failure_response_code field: a final HTTP status a client can receive. */
export function parsePartialFailureCode(fields: FieldData): number | undefined {
  if (!fields.has('partial_failure_response_code')) return undefined;
  const code = fields.int('partial_failure_response_code');
  // Vault takes 1-599; a 1xx cannot be a final HTTP reply, so those are refused here.
  if (code < 200 || code > 599) {
    throw new BadRequestError('invalid value for "partial_failure_response_code": must be an HTTP status between 200 and 599');
  }
  return code;
}

/**
 * The JSON text of a successful item's members, exactly as JSON.stringify writes them, without
 * the braces (`"ciphertext":"vault:v1:...","key_version":1`), in ASCII: its length is its size.
 */
export type OkMembersJson = (ok: Record<string, unknown>) => string;

/**
 * The reply to a batch: `batch_results` in input order, each with its `reference`. With no
 * failure the status is 200. When items failed it is 400 if any failure was the caller's and
 * 500 otherwise; if some items succeeded, partial_failure_response_code replaces it.
 *
 * With `okJson`, the reply's results are marked with a builder of their JSON text (core's
 * `withJsonText`), which writes each successful item from it and each failed one with
 * JSON.stringify, so the HTTP layer does not serialize a large batch again.
 */
export function batchReply(
  items: readonly BatchItem[], outcomes: readonly ItemOutcome[], partialFailureCode: number | undefined, logger: Logger,
  okJson?: OkMembersJson,
): BackendResponse {
  let failures = 0;
  let userFailures = 0;
  const results = outcomes.map((outcome, i): Record<string, unknown> => {
    const reference = items[i]?.['reference'];
    const ref = typeof reference === 'string' ? reference : reference === undefined || reference === null ? '' : String(reference);
    if ('ok' in outcome) return { ...outcome.ok, reference: ref };
    failures++;
    const user = isUserError(outcome.error);
    if (user) userFailures++;
    else logger.error('transit batch item failed', { index: i, error: String(outcome.error) });
    return { error: user ? (outcome.error as Error).message : 'internal error', reference: ref };
  });
  const data = { batch_results: results };
  if (okJson && results.length > 0) withJsonText(data, 'batch_results', () => resultsJson(outcomes, results, okJson));
  const reply: BackendResponse = { data };
  if (failures > 0) {
    const someSucceeded = failures < outcomes.length;
    reply.status = someSucceeded && partialFailureCode !== undefined ? partialFailureCode : userFailures > 0 ? 400 : 500;
  }
  return reply;
}

/**
 * Characters of item text gathered into each piece of a batch's text before it is joined: a
 * piece of one-byte text (any reference in Latin-1) stays under V8's large-object size
 * (128 KiB), so it is made in the young generation and dies there once written. One string for
 * the whole text is a large object, which V8 makes in the old generation, freed only by a full
 * collection. An item larger than this ends a piece of its own.
 */
const PIECE_CHARS = 60 * 1024;

/** `results`' JSON text as JSON.stringify writes it, each success's members from `okJson`, and its size in UTF-8. */
function resultsJson(outcomes: readonly ItemOutcome[], results: ReadonlyArray<Record<string, unknown>>, okJson: OkMembersJson): JsonTextValue {
  const pieces: string[] = [];
  // The items of the piece being gathered, each after what comes before it (the bracket, or a comma).
  let piece: string[] = ['['];
  let chars = 0;
  // Counted as it is built: the commas between items and the brackets, then each item.
  let bytes = results.length + 1;
  for (let i = 0; i < results.length; i++) {
    const outcome = outcomes[i] as ItemOutcome;
    const result = results[i] as Record<string, unknown>;
    let text: string;
    if ('ok' in outcome) {
      const ref = result['reference'] as string;
      const refJson = ref === '' ? '""' : JSON.stringify(ref);
      text = `{${okJson(outcome.ok)},"reference":${refJson}}`;
      bytes += ref === '' ? text.length : text.length - refJson.length + Buffer.byteLength(refJson);
    } else {
      text = JSON.stringify(result);
      bytes += Buffer.byteLength(text);
    }
    if (i > 0) piece.push(',');
    piece.push(text);
    chars += text.length;
    if (chars >= PIECE_CHARS) {
      pieces.push(piece.join(''));
      piece = [];
      chars = 0;
    }
  }
  piece.push(']');
  pieces.push(piece.join(''));
  return { pieces, bytes };
}
