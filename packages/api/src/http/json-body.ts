import type { JsonLimits } from '@strongroom/base';
import { BadRequestError } from '@strongroom/core';
import { utf8Text } from './utf8-text';

export type { JsonLimits };

/** Vault's defaults. */
export const DEFAULT_JSON_LIMITS: Readonly<JsonLimits> = Object.freeze({
  maxDepth: 500,
  maxStringLength: 1024 * 1024,
  maxObjectEntries: 10_000,
  maxArrayElements: 10_000,
});

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const MINUS = 0x2d;
const PLUS = 0x2b;
const DOT = 0x2e;
const ZERO = 0x30;
const NINE = 0x39;
const NEWLINE = 0x0a;

const LITERALS = [Buffer.from('true'), Buffer.from('false'), Buffer.from('null')];

function isDigit(b: number | undefined): boolean {
  return b !== undefined && b >= ZERO && b <= NINE;
}

function isWhitespace(b: number): boolean {
  return b === 0x20 || b === NEWLINE || b === 0x0d || b === 0x09;
}

function isHex(b: number | undefined): boolean {
  return b !== undefined && ((b >= ZERO && b <= NINE) || (b >= 0x41 && b <= 0x46) || (b >= 0x61 && b <= 0x66));
}

const ESCAPABLE = new Set([QUOTE, BACKSLASH, 0x2f, 0x62, 0x66, 0x6e, 0x72, 0x74]);

/** Bytes that end a run of plain string content: the quote, the backslash, control characters. */
const STRING_STOP = new Uint8Array(256);
for (let b = 0; b < 0x20; b++) STRING_STOP[b] = 1;
STRING_STOP[QUOTE] = 1;
STRING_STOP[BACKSLASH] = 1;

/**
 * Where byte `at` of `raw` is, as a person reading the body would count: lines from 1, columns
 * in characters from 1 (a multi-byte UTF-8 character counts once).
 */
function position(raw: Buffer, at: number): string {
  let line = 1;
  let column = 1;
  for (let i = 0; i < at && i < raw.length; i++) {
    const b = raw[i] as number;
    if (b === NEWLINE) {
      line++;
      column = 1;
    } else if ((b & 0xc0) !== 0x80) {
      column++;
    }
  }
  return `line ${line}, column ${column}`;
}

// Never quotes the body: it may hold a secret.
function syntaxError(raw: Buffer, at: number, what: string): BadRequestError {
  const where = at >= raw.length ? 'unexpected end of input' : `${what} at ${position(raw, at)}`;
  return new BadRequestError(`failed to parse JSON input: ${where}`);
}

// The state of the container being read, kept on an explicit stack so that nesting costs no
// native stack: a body is checked whole before JSON.parse and anything recursive sees it.
const IN_OBJECT = 0;
const IN_ARRAY = 1;

// Reused between calls: the check runs synchronously, one body at a time.
const kinds: number[] = [];
const counts: number[] = [];
/**
 * The key of the top-level member being read, when it is a plain short name: a request's fields
 * are its top-level members, so an over-long value there is reported against its field.
 */
let field: string | undefined;
/**
 * Set while parseJson's first, quick check runs: long strings are then skipped with memchr
 * (the next quote, and the next backslash, which is kept for later strings) instead of a byte
 * at a time, so control characters in them go unseen. JSON.parse refuses those; parseJson then
 * checks again byte by byte for the message, as it does after any refusal, so every answer is
 * the full check's.
 */
let quick = false;
/** In quick mode: where the next backslash at or after the last search is (raw.length: none). */
let nextBackslash = -1;
/** Strings shorter than this are read a byte at a time even in quick mode: a native call costs more. */
const QUICK_MIN_RUN = 32;

/**
 * Checks that `raw` is one JSON value within `limits`, reading it once, front to back, without
 * building it. Throws a BadRequestError naming the limit exceeded, or saying where (line and
 * column) the syntax is wrong.
 */
export function checkJson(raw: Buffer, limits: JsonLimits): void {
  const n = raw.length;
  kinds.length = 0;
  counts.length = 0;
  let i = 0;
  // What the next token may be: a value, or what follows one.
  let wantValue = true;
  field = undefined;
  try {
    for (;;) {
      while (i < n && isWhitespace(raw[i] as number)) i++;
      if (wantValue) {
        if (i >= n) throw syntaxError(raw, i, '');
        const b = raw[i] as number;
        if (b === OPEN_OBJECT || b === OPEN_ARRAY) {
          if (kinds.length >= limits.maxDepth) {
            throw new BadRequestError(`JSON input is nested deeper than max_json_depth (${limits.maxDepth}) allows`);
          }
          i++;
          const object = b === OPEN_OBJECT;
          kinds.push(object ? IN_OBJECT : IN_ARRAY);
          counts.push(0);
          while (i < n && isWhitespace(raw[i] as number)) i++;
          if (raw[i] === (object ? CLOSE_OBJECT : CLOSE_ARRAY)) {
            i++;
            kinds.pop();
            counts.pop();
            wantValue = false;
            continue;
          }
          if (object) {
            i = member(raw, i, limits, true);
          } else {
            counts[counts.length - 1] = 1;
            if (limits.maxArrayElements < 1) throw tooManyElements(limits);
          }
          continue;
        }
        if (b === QUOTE) i = string(raw, i, limits);
        else if (b === MINUS || isDigit(b)) i = number(raw, i);
        else i = literal(raw, i);
        wantValue = false;
        continue;
      }
      const depth = kinds.length;
      if (depth === 0) {
        if (i < n) throw syntaxError(raw, i, 'unexpected data after the JSON value');
        return;
      }
      if (i >= n) throw syntaxError(raw, i, '');
      const b = raw[i] as number;
      const object = kinds[depth - 1] === IN_OBJECT;
      if (b === (object ? CLOSE_OBJECT : CLOSE_ARRAY)) {
        i++;
        kinds.pop();
        counts.pop();
        continue;
      }
      if (b !== COMMA) throw syntaxError(raw, i, object ? "expected ',' or '}'" : "expected ',' or ']'");
      i++;
      const count = (counts[depth - 1] as number) + 1;
      counts[depth - 1] = count;
      if (object) {
        if (count > limits.maxObjectEntries) throw tooManyEntries(limits);
        while (i < n && isWhitespace(raw[i] as number)) i++;
        i = member(raw, i, limits, false);
      } else if (count > limits.maxArrayElements) {
        throw tooManyElements(limits);
      }
      wantValue = true;
    }
  } finally {
    kinds.length = 0;
    counts.length = 0;
    field = undefined;
  }
}

/** Reads `"key" :` of an object's entry (`first` of it or not); the value comes next. */
function member(raw: Buffer, at: number, limits: JsonLimits, first: boolean): number {
  if (first) {
    counts[counts.length - 1] = 1;
    if (limits.maxObjectEntries < 1) throw tooManyEntries(limits);
  }
  if (raw[at] !== QUOTE) throw syntaxError(raw, at, first ? "expected a string key or '}'" : 'expected a string key');
  field = undefined; // an over-long key is no field's value
  let j = string(raw, at, limits);
  field = kinds.length === 1 ? fieldName(raw, at + 1, j - 1) : undefined;
  while (j < raw.length && isWhitespace(raw[j] as number)) j++;
  if (raw[j] !== COLON) throw syntaxError(raw, j, "expected ':' after an object key");
  return j + 1;
}

/** A key's text when it is a plain field name (letters, digits, `_`, `-`, `.`; at most 64 bytes). */
function fieldName(raw: Buffer, from: number, to: number): string | undefined {
  if (to - from > 64 || to <= from) return undefined;
  for (let k = from; k < to; k++) {
    const b = raw[k] as number;
    const plain = (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a) || b === 0x5f || b === 0x2d || b === 0x2e;
    if (!plain) return undefined;
  }
  return raw.toString('latin1', from, to);
}

function tooManyEntries(limits: JsonLimits): BadRequestError {
  return new BadRequestError(`a JSON object in the input has more entries than max_json_object_entry_count (${limits.maxObjectEntries}) allows`);
}

function tooManyElements(limits: JsonLimits): BadRequestError {
  return new BadRequestError(`a JSON array in the input has more elements than max_json_array_element_count (${limits.maxArrayElements}) allows`);
}

/** Reads a string starting at its opening quote; returns the index after its closing quote. */
function string(raw: Buffer, at: number, limits: JsonLimits): number {
  const start = at + 1;
  const n = raw.length;
  // Bytes past the limit are never looked at.
  const stop = Math.min(n, start + limits.maxStringLength + 1);
  let j = start;
  if (quick) {
    const near = Math.min(stop, start + QUICK_MIN_RUN);
    while (j < near && STRING_STOP[raw[j] as number] === 0) j++;
    if (j === near && j < stop) {
      const close = raw.indexOf(QUOTE, j);
      if (nextBackslash < j) {
        const b = raw.indexOf(BACKSLASH, j);
        nextBackslash = b === -1 ? n : b;
      }
      // Anything else (an escape, a string over the limit or unterminated) is read below.
      if (close !== -1 && close < nextBackslash && close - start <= limits.maxStringLength) return close + 1;
    }
  }
  while (j < stop) {
    // Most of a body's bytes are plain string content; skip those in a tight loop.
    while (j < stop && STRING_STOP[raw[j] as number] === 0) j++;
    if (j >= stop) break;
    const b = raw[j] as number;
    if (b === QUOTE) return j + 1;
    if (b === BACKSLASH) {
      const e = raw[j + 1];
      if (e === 0x75) {
        if (!(isHex(raw[j + 2]) && isHex(raw[j + 3]) && isHex(raw[j + 4]) && isHex(raw[j + 5]))) throw syntaxError(raw, j, 'invalid \\u escape in a string');
        j += 6;
      } else if (e !== undefined && ESCAPABLE.has(e)) {
        j += 2;
      } else {
        throw syntaxError(raw, j, 'invalid escape in a string');
      }
      continue;
    }
    if (b < 0x20) throw syntaxError(raw, j, 'control character in a string');
    j++;
  }
  if (stop < n || j > start + limits.maxStringLength) {
    const what = `longer than max_json_string_value_length (${limits.maxStringLength} bytes) allows`;
    // The value of a top-level member names its field.
    if (field !== undefined && kinds.length === 1) throw new BadRequestError(`${field}: the value is ${what}`);
    throw new BadRequestError(`a JSON string in the input is ${what}`);
  }
  throw syntaxError(raw, n, '');
}

function number(raw: Buffer, at: number): number {
  let j = at;
  if (raw[j] === MINUS) j++;
  if (raw[j] === ZERO) {
    j++;
  } else if (isDigit(raw[j])) {
    while (isDigit(raw[j])) j++;
  } else {
    throw syntaxError(raw, j, 'invalid number');
  }
  if (raw[j] === DOT) {
    j++;
    if (!isDigit(raw[j])) throw syntaxError(raw, j, 'invalid number');
    while (isDigit(raw[j])) j++;
  }
  if (raw[j] === 0x65 || raw[j] === 0x45) {
    j++;
    if (raw[j] === PLUS || raw[j] === MINUS) j++;
    if (!isDigit(raw[j])) throw syntaxError(raw, j, 'invalid number');
    while (isDigit(raw[j])) j++;
  }
  return j;
}

function literal(raw: Buffer, at: number): number {
  for (const word of LITERALS) {
    if (raw[at] === word[0]) {
      if (raw.length - at >= word.length && raw.compare(word, 0, word.length, at, at + word.length) === 0) return at + word.length;
      break;
    }
  }
  throw syntaxError(raw, at, 'unexpected character');
}

/**
 * Parses a JSON body within `limits`. JSON.parse only ever sees a body the check accepted, so its
 * own messages (which quote the input) are never shown. A refused body is checked again in
 * full, so its message is the full check's whichever check or parse refused it first.
 */
export function parseJson(raw: Buffer, limits: JsonLimits): unknown {
  quick = true;
  nextBackslash = -1;
  try {
    checkJson(raw, limits);
  } catch (err) {
    // The quick check may have passed a control character the full check stops at first.
    quick = false;
    checkJson(raw, limits);
    throw err;
  } finally {
    quick = false;
  }
  try {
    return JSON.parse(utf8Text(raw)) as unknown;
  } catch {
    checkJson(raw, limits);
    throw new BadRequestError('failed to parse JSON input');
  }
}
