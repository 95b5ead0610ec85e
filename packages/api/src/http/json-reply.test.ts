import { withJsonText } from '@strongroom/core';
import { jsonReply, type SplicedJson } from './json-reply';

const text = (reply: string | SplicedJson): string => (typeof reply === 'string' ? reply : reply.pieces.join(''));

const envelope = (data: Record<string, unknown> | null) => ({
  request_id: 'r', lease_id: '', renewable: false, lease_duration: 0, data, wrap_info: null, warnings: ['w "1"'], auth: null, mount_type: 'transit',
});

describe('jsonReply', () => {
  it('answers JSON.stringify of a body with nothing marked', () => {
    const body = envelope({ ciphertext: 'vault:v1:abc' });
    expect(jsonReply(body)).toBe(JSON.stringify(body));
    expect(jsonReply(null)).toBe('null');
    expect(jsonReply('text')).toBe('"text"');
  });

  it('answers a marked field\'s text as a piece of its own between the rest, together the bytes JSON.stringify gives', () => {
    const results = [{ ciphertext: 'vault:v1:abc', key_version: 1, reference: 'caf\u00e9 "x"' }, { error: 'bad\n', reference: '' }];
    const data = withJsonText({ batch_results: results, other: 'é' }, 'batch_results', () => ({ pieces: [JSON.stringify(results)] }));
    const reply = jsonReply(envelope(data));
    expect(typeof reply).toBe('object');
    expect((reply as SplicedJson).pieces[1]).toBe(JSON.stringify(results));
    const expected = JSON.stringify(envelope({ batch_results: results, other: 'é' }));
    expect(text(reply)).toBe(expected);
    expect((reply as SplicedJson).bytes).toBe(Buffer.byteLength(expected));
  });

  it('takes the length in bytes the engine gives for the text rather than measuring it', () => {
    const data = withJsonText({ batch_results: [1] }, 'batch_results', () => ({ pieces: ['[1]'], bytes: 1000 }));
    const outside = Buffer.byteLength(JSON.stringify(envelope(data))) - 3;
    expect((jsonReply(envelope(data)) as SplicedJson).bytes).toBe(outside + 1000);
  });

  it('writes the marked text, not the value, so the value is only what other readers see', () => {
    // Text that differs from the value (here only by spacing) shows which one was written.
    const data = withJsonText({ batch_results: [1, 2] }, 'batch_results', () => ({ pieces: ['[1, 2]'] }));
    expect(text(jsonReply(envelope(data)))).toContain('"data":{"batch_results":[1, 2]}');
  });

  it('leaves to JSON.stringify a body holding the marked value twice, a field changed or copied since it was marked, or a lookalike string', () => {
    const results = [{ a: 1 }];
    const twice = withJsonText({ batch_results: results, copy: results }, 'batch_results', () => ({ pieces: ['[{"a":1}]'] }));
    expect(jsonReply(envelope(twice))).toBe(JSON.stringify(envelope(twice)));
    const gone = withJsonText({ batch_results: results }, 'batch_results', () => ({ pieces: ['[{"a":1}]'] }));
    delete (gone as Record<string, unknown>)['batch_results'];
    expect(jsonReply(envelope(gone))).toBe(JSON.stringify(envelope(gone)));
    const replaced = withJsonText({ batch_results: results }, 'batch_results', () => ({ pieces: ['[{"a":1}]'] }));
    replaced.batch_results = [{ a: 2 }];
    expect(jsonReply(envelope(replaced))).toBe(JSON.stringify(envelope(replaced)));
    const spread = { ...withJsonText({ batch_results: results }, 'batch_results', () => ({ pieces: ['[{"b":1}]'] })) };
    expect(jsonReply(envelope(spread))).toBe(JSON.stringify(envelope(spread)));
    const lookalike = withJsonText({ batch_results: results, note: '\u0000' }, 'batch_results', () => ({ pieces: ['[{"a":1}]'] }));
    expect(text(jsonReply(envelope(lookalike)))).toBe(JSON.stringify(envelope(lookalike)));
  });
});
