import { BadRequestError, jsonTextOf, silentLogger } from '@strongroom/core';
import { batchReply, runItems } from './batch';

describe('batchReply', () => {
  const items = [{ reference: 'a' }, { reference: 'b' }, {}];

  it('answers 500 when the only failures are internal, and hides their text', async () => {
    const outcomes = await runItems(items, async (_item, i) => {
      if (i === 1) throw new Error('disk on fire');
      return { ok: true };
    });
    const logged: string[] = [];
    const reply = batchReply(items, outcomes, undefined, { ...silentLogger, error: (m) => { logged.push(m); } });
    expect(reply.status).toBe(500);
    expect((reply.data?.['batch_results'] as unknown[])[1]).toEqual({ error: 'internal error', reference: 'b' });
    expect(logged).toHaveLength(1);
  });

  it('answers 400 when any failure was the caller\'s', async () => {
    const outcomes = await runItems(items, async (_item, i) => {
      if (i === 0) throw new Error('internal');
      if (i === 1) throw new BadRequestError('bad item');
      return {};
    });
    expect(batchReply(items, outcomes, undefined, silentLogger).status).toBe(400);
  });

  it('carries the results\' JSON text, as JSON.stringify writes them, when given the members of a success', () => {
    const refs = [{ reference: 'r "1"' }, {}, { reference: 7 }, { reference: 'caf\u00e9\n' }];
    const outcomes = [
      { ok: { ciphertext: 'vault:v1:QUJD', key_version: 1 } },
      { error: new BadRequestError('invalid value for "plaintext": expected standard base64') },
      { ok: { ciphertext: 'vault:v2:REVG', key_version: 2 } },
      { error: new Error('internal') },
    ];
    const members = jest.fn((ok: Record<string, unknown>) => `"ciphertext":"${String(ok['ciphertext'])}","key_version":${String(ok['key_version'])}`);
    const reply = batchReply(refs, outcomes, 207, silentLogger, members);
    expect(reply.status).toBe(207);
    const marked = jsonTextOf(reply.data);
    expect(marked?.field).toBe('batch_results');
    // Built when the reply is written, not held from the engine's answer until then.
    expect(members).not.toHaveBeenCalled();
    const built = marked?.render();
    expect(built?.pieces.join('')).toBe(JSON.stringify(reply.data?.['batch_results']));
    expect(built?.bytes).toBe(Buffer.byteLength(built?.pieces.join('') ?? ''));
    expect(jsonTextOf(batchReply(refs, outcomes, 207, silentLogger).data)).toBeUndefined();
  });

  it('builds a large batch\'s text in pieces of less than V8\'s large-object size, which together are JSON.stringify\'s', () => {
    const items = Array.from({ length: 1000 }, (_, i) => (i % 3 === 0 ? { reference: `r${i}` } : {}));
    const ciphertext = `vault:v1:${'A'.repeat(1420)}`;
    const outcomes = items.map((_, i) => (i === 500 ? { error: new BadRequestError('bad "item"') } : { ok: { ciphertext, key_version: 1 } }));
    const members = (ok: Record<string, unknown>) => `"ciphertext":"${String(ok['ciphertext'])}","key_version":${String(ok['key_version'])}`;
    const reply = batchReply(items, outcomes, undefined, silentLogger, members);
    const built = jsonTextOf(reply.data)?.render();
    const text = JSON.stringify(reply.data?.['batch_results']);
    expect(built?.pieces.join('')).toBe(text);
    expect(built?.bytes).toBe(Buffer.byteLength(text));
    expect(built?.pieces.length).toBeGreaterThan(10);
    for (const piece of built?.pieces ?? []) expect(piece.length).toBeLessThan(128 * 1024);
  });
});
