import { BadRequestError } from '@strongroom/core';
import { DEFAULT_JSON_LIMITS, checkJson, parseJson, type JsonLimits } from './json-body';

const buf = (text: string): Buffer => Buffer.from(text, 'utf8');

function refusal(text: string | Buffer, limits: JsonLimits = DEFAULT_JSON_LIMITS): string {
  try {
    checkJson(typeof text === 'string' ? buf(text) : text, limits);
  } catch (err) {
    expect(err).toBeInstanceOf(BadRequestError);
    return (err as Error).message;
  }
  throw new Error('accepted');
}

const nested = (depth: number, inner = '1'): string => '{"a":'.repeat(depth) + inner + '}'.repeat(depth);
const nestedArrays = (depth: number): string => '['.repeat(depth) + ']'.repeat(depth);

/** A small seeded generator, so that a failing case can be run again. */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('parsing a JSON body', () => {
  it.each([
    '{}', '[]', '{"a":1}', ' { "a" : [ 1 , -2.5e-3 , 0 , 1E+2 , true , false , null , "x" ] } ', '"text"', '0', '-0.0', 'null',
    '{"esc":"\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u00e9 \\uD83D\\uDE00"}', '{"utf8":"héllo ✓ 😀"}', '[[],[{}],{"":""}]',
    '{"a":{"b":{"c":[1,{"d":[]}]}}}', '\n\t{\r\n"k"\n:\n"v"\n}\n', '{"dup":1,"dup":2}', '{"__proto__":{"x":1}}',
  ])('reads %s as JSON.parse does', (text) => {
    expect(parseJson(buf(text), DEFAULT_JSON_LIMITS)).toEqual(JSON.parse(text));
  });

  it.each([
    ['{', 'unexpected end of input'],
    ['{"a":1,}', "expected a string key at line 1, column 8"],
    ['{"a" 1}', "expected ':' after an object key at line 1, column 6"],
    ['[1 2]', "expected ',' or ']' at line 1, column 4"],
    ['{"a":1 "b":2}', "expected ',' or '}' at line 1, column 8"],
    ['[01]', "expected ',' or ']' at line 1, column 3"],
    ['[1.]', 'invalid number at line 1, column 4'],
    ['[-]', 'invalid number at line 1, column 3'],
    ['[1e]', 'invalid number at line 1, column 4'],
    ['[tru]', 'unexpected character at line 1, column 2'],
    ['[NaN]', 'unexpected character at line 1, column 2'],
    ["{'a':1}", "expected a string key or '}' at line 1, column 2"],
    ['{"a":"\\x"}', 'invalid escape in a string at line 1, column 7'],
    ['{"a":"\\u12G4"}', 'invalid \\u escape in a string at line 1, column 7'],
    ['{"a":"tab\there"}', 'control character in a string at line 1, column 10'],
    ['{} {}', 'unexpected data after the JSON value at line 1, column 4'],
    ['  ', 'unexpected end of input'],
    ['{"a":"unterminated', 'unexpected end of input'],
    ['\ufeff{}', 'unexpected character at line 1, column 1'],
  ])('refuses %j saying where: %s', (text, where) => {
    expect(refusal(text)).toBe(`failed to parse JSON input: ${where}`);
  });

  it('says where on later lines, counting characters rather than bytes, and never quotes the input', () => {
    const body = '{\n  "user": "émilie",\n  "password": PLAINTEXT-hunter2\n}';
    const message = refusal(body);
    expect(message).toBe('failed to parse JSON input: unexpected character at line 3, column 15');
    expect(message).not.toMatch(/PLAINTEXT|hunter2|password|émilie/);
    expect(refusal('{"naïve":"ü",  x}')).toBe("failed to parse JSON input: expected a string key at line 1, column 16");
  });

  it('takes nesting up to max_json_depth and refuses one level more, naming the limit', () => {
    expect(() => checkJson(buf(nested(500)), DEFAULT_JSON_LIMITS)).not.toThrow();
    expect(() => checkJson(buf(nestedArrays(500)), DEFAULT_JSON_LIMITS)).not.toThrow();
    expect(refusal(nested(501))).toBe('JSON input is nested deeper than max_json_depth (500) allows');
    expect(refusal(nestedArrays(501))).toBe('JSON input is nested deeper than max_json_depth (500) allows');
    expect(refusal(nested(3), { ...DEFAULT_JSON_LIMITS, maxDepth: 2 })).toMatch(/max_json_depth \(2\)/);
  });

  it('refuses a million levels of nesting without exhausting the stack', () => {
    expect(refusal(nestedArrays(1_000_000))).toMatch(/max_json_depth/);
    expect(refusal('['.repeat(1_000_000), { ...DEFAULT_JSON_LIMITS, maxDepth: 2_000_000 })).toBe('failed to parse JSON input: unexpected end of input');
  });

  it('bounds string length in bytes as sent, for keys and values alike', () => {
    const limits = { ...DEFAULT_JSON_LIMITS, maxStringLength: 8 };
    expect(() => checkJson(buf('{"12345678":"abcdefgh"}'), limits)).not.toThrow();
    expect(() => checkJson(buf('["\\u00e9\\n"]'), limits)).not.toThrow();
    const tooLong = 'a JSON string in the input is longer than max_json_string_value_length (8 bytes) allows';
    // A top-level member's value names its field (a request's fields are those members); a key,
    // a nested value or a key that is no plain name does not.
    expect(refusal('{"a":"abcdefghi"}', limits)).toBe('a: the value is longer than max_json_string_value_length (8 bytes) allows');
    expect(refusal('{"b":1, "policy" : "abcdefghi"}', limits)).toMatch(/^policy: the value is longer/);
    expect(refusal('{"a":{"b":"abcdefghi"}}', limits)).toBe(tooLong);
    expect(refusal('{"a b":"abcdefghi"}', limits)).toBe(tooLong);
    expect(refusal('{"123456789":1}', limits)).toBe(tooLong);
    expect(refusal('{"a":1,"123456789":1}', limits)).toBe(tooLong);
    expect(refusal('["\\u00e9\\n\\t"]', limits)).toBe(tooLong);
    // Multi-byte characters count by their bytes: 3 × 3 bytes.
    expect(refusal('["✓✓✓"]', limits)).toBe(tooLong);
    expect(refusal(`["${'x'.repeat(2 * 1024 * 1024)}"]`)).toMatch(/max_json_string_value_length \(1048576 bytes\)/);
    expect(refusal(`["${'x'.repeat(100)}`, limits)).toBe(tooLong);
  });

  it('bounds the entries of each object and the elements of each array', () => {
    const limits = { ...DEFAULT_JSON_LIMITS, maxObjectEntries: 3, maxArrayElements: 2 };
    expect(() => checkJson(buf('{"a":[1,2],"b":{"x":[3,4],"y":1,"z":{}},"c":[[1,2],[3,4]]}'), limits)).not.toThrow();
    expect(refusal('{"a":1,"b":2,"c":3,"d":4}', limits)).toBe('a JSON object in the input has more entries than max_json_object_entry_count (3) allows');
    expect(refusal('{"a":{"a":1,"b":2,"c":3,"d":4}}', limits)).toMatch(/max_json_object_entry_count \(3\)/);
    expect(refusal('[1,2,3]', limits)).toBe('a JSON array in the input has more elements than max_json_array_element_count (2) allows');
    expect(refusal('[[1],[1,2,3]]', limits)).toMatch(/max_json_array_element_count \(2\)/);
    expect(refusal('{"k":[' + '0,'.repeat(10_000) + '0]}')).toMatch(/max_json_array_element_count \(10000\)/);
    const wide = '{' + Array.from({ length: 10_001 }, (_, i) => `"k${i}":0`).join(',') + '}';
    expect(refusal(wide)).toMatch(/max_json_object_entry_count \(10000\)/);
  });

  it('answers long strings as the byte-by-byte check does: escapes, control characters, limits and which error comes first', () => {
    const long = 'x'.repeat(100);
    const limits = { ...DEFAULT_JSON_LIMITS, maxStringLength: 150, maxDepth: 3 };
    const parseRefusal = (text: string): string => {
      try {
        parseJson(buf(text), limits);
      } catch (err) {
        expect(err).toBeInstanceOf(BadRequestError);
        return (err as Error).message;
      }
      throw new Error('accepted');
    };
    const bodies = [
      `{"a":"${long}\\n${long}"}`, `{"a":"${long}\\u00e9", "b":"${long}\\"${'y'.repeat(40)}"}`, `["${long}\\t", "${long}"]`,
      `{"a":"${long}\\x"}`, `{"a":"${long}\\u12G4"}`, `{"a":"${long}\t"}`, `{"a":"${long}${long}"}`, `{"a":"${long}\u0001"}`,
      // A control character in a long string comes before a later limit: the full check stops there first.
      `{"a":"${long}\u0001","b":[[[[1]]]]}`, `{"a":"${long}\t","b":"${long}${long}"}`, `{"a":"${long}`, `{"${long}\t":1}`,
      `{"a":"${long}\u2713"}`, `["${'✓'.repeat(49)}", "${'✓'.repeat(51)}"]`,
    ];
    for (const text of bodies) {
      let full: string | null = null;
      try {
        checkJson(buf(text), limits);
      } catch (err) {
        full = (err as Error).message;
      }
      if (full === null) expect(parseJson(buf(text), limits)).toEqual(JSON.parse(text));
      else expect(parseRefusal(text)).toBe(full);
    }
  });

  it('accepts exactly what JSON.parse accepts, over bounded random mutations of valid bodies', () => {
    const next = random(19);
    const seeds = [
      '{"a":[1,-2.5e+3,true,null,"x\\n\\u00e9"],"b":{"c":{}},"d":""}', '[0,{"k":[false,"v"]},-0.1E-2]', '"s"',
      // Strings long enough for parseJson's quick skip, with and without escapes.
      `{"${'k'.repeat(33)}":"${'v'.repeat(40)}\\n${'w'.repeat(40)}","p":["${'q'.repeat(50)}"]}`,
    ];
    const alphabet = '{}[],:"\\ \n0123456789-+.eEtrufalsn\u00e9x\t\u0001';
    for (let round = 0; round < 3000; round++) {
      const chars = [...(seeds[round % seeds.length] as string)];
      const edits = 1 + Math.floor(next() * 3);
      for (let e = 0; e < edits; e++) {
        const at = Math.floor(next() * (chars.length + 1));
        const c = alphabet[Math.floor(next() * alphabet.length)] as string;
        const kind = next();
        if (kind < 0.4) chars.splice(at, 1);
        else if (kind < 0.7) chars.splice(at, 0, c);
        else chars.splice(at, 1, c);
      }
      const text = chars.join('');
      let native: unknown;
      let nativeOk = true;
      try {
        native = JSON.parse(text);
      } catch {
        nativeOk = false;
      }
      let ours: unknown;
      let oursOk = true;
      try {
        ours = parseJson(buf(text), DEFAULT_JSON_LIMITS);
      } catch (err) {
        expect(err).toBeInstanceOf(BadRequestError);
        expect((err as Error).message).not.toBe('failed to parse JSON input');
        oursOk = false;
      }
      if (oursOk !== nativeOk) throw new Error(`disagrees with JSON.parse on ${JSON.stringify(text)}`);
      if (oursOk) expect(ours).toEqual(native);
    }
  });
});
