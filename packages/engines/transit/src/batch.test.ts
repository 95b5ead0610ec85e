import { BadRequestError, silentLogger } from '@strongroom/core';
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
});
