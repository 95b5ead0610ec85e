import { EventEmitter } from 'node:events';
import type { Client, ClientDuplexStream, MethodDefinition, ServerDuplexStream } from '@grpc/grpc-js';
import { CallChannel, serveCalls } from './member-calls';
import type { WireCallRequests, WireCallResponses } from './raft-proto';

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));
/** Long enough for handlers that answer at once to have answered and their answers to be sent. */
const answersSent = () => new Promise((resolve) => setImmediate(() => setImmediate(resolve)));

/** A stream end that records what is written to it; `emit('data', ...)` plays the other side. */
class FakeStream extends EventEmitter {
  readonly written: unknown[] = [];
  cancelled = false;
  destroyed = false;
  ended = false;
  write(message: unknown): boolean {
    this.written.push(message);
    return true;
  }
  end(): void {
    this.ended = true;
  }
  cancel(): void {
    this.cancelled = true;
  }
}

function channel(maxMessageBytes = 1 << 20): { channel: CallChannel; stream: FakeStream } {
  const stream = new FakeStream();
  const client = { makeBidiStreamRequest: () => stream, close: () => {} } as unknown as Client;
  const method = { path: '/strongroom.raft.Raft/Calls' } as unknown as MethodDefinition<WireCallRequests, WireCallResponses>;
  return { channel: new CallChannel('b:1', client, method, maxMessageBytes), stream };
}

describe('CallChannel', () => {
  it('sends the calls of one turn as one message and matches answers from any message', async () => {
    const { channel: c, stream } = channel();
    const [one, two, three] = ['one', 'two', 'three'].map((t) => c.call(Buffer.from(t))) as [Promise<Buffer>, Promise<Buffer>, Promise<Buffer>];
    expect(stream.written).toEqual([]);
    await nextTurn();
    expect(stream.written).toHaveLength(1);
    const sent = (stream.written[0] as WireCallRequests).calls;
    expect(sent.map((call) => call.payload.toString())).toEqual(['one', 'two', 'three']);
    const [a, b, d] = sent.map((call) => call.id);
    stream.emit('data', { answers: [{ id: d, payload: Buffer.from('3'), error: '' }, { id: a, payload: Buffer.alloc(0), error: 'no' }] });
    stream.emit('data', { answers: [{ id: b, payload: Buffer.from('2'), error: '' }] });
    await expect(one).rejects.toThrow('no');
    expect((await two).toString()).toBe('2');
    expect((await three).toString()).toBe('3');

    const later = c.call(Buffer.from('four'));
    await nextTurn();
    expect(stream.written).toHaveLength(2);
    const [four] = (stream.written[1] as WireCallRequests).calls.map((call) => call.id);
    stream.emit('data', { answers: [{ id: four, payload: Buffer.from('4'), error: '' }] });
    expect((await later).toString()).toBe('4');
  });

  it('splits what one turn gathered so that no message passes the limit', async () => {
    const { channel: c, stream } = channel(1000);
    const calls = Array.from({ length: 5 }, () => c.call(Buffer.alloc(400)));
    await nextTurn();
    // 400 bytes and framing each: two fit under 1,000.
    expect(stream.written.map((m) => (m as WireCallRequests).calls.length)).toEqual([2, 2, 1]);
    c.close();
    for (const call of calls) await expect(call).rejects.toThrow(/closed/);
  });

  it('does not send calls that failed with their stream before the turn ended', async () => {
    const { channel: c, stream } = channel();
    const call = c.call(Buffer.from('x'));
    stream.emit('error', new Error('connection reset'));
    await expect(call).rejects.toThrow('connection reset');
    await nextTurn();
    expect(stream.written).toEqual([]);
  });
});

describe('serveCalls', () => {
  function serve(handler: (payload: Buffer) => Promise<Buffer>, maxMessageBytes = 1 << 20): FakeStream {
    const stream = new FakeStream();
    serveCalls(stream as unknown as ServerDuplexStream<WireCallRequests, WireCallResponses>, () => handler, maxMessageBytes);
    return stream;
  }

  it('answers the calls that finish in one turn with one message, and ends after the last answer', async () => {
    let release: () => void = () => {};
    const slow = new Promise<void>((resolve) => { release = resolve; });
    const stream = serve(async (payload) => {
      if (payload.toString() === 'slow') await slow;
      return Buffer.from(`done ${payload.toString()}`);
    });
    stream.emit('data', { calls: [{ id: 1, payload: Buffer.from('a') }, { id: 2, payload: Buffer.from('slow') }, { id: 3, payload: Buffer.from('b') }] });
    stream.emit('end');
    await answersSent();
    expect(stream.written).toEqual([{ answers: [
      { id: 1, payload: Buffer.from('done a'), error: '' },
      { id: 3, payload: Buffer.from('done b'), error: '' },
    ] }]);
    expect(stream.ended).toBe(false);
    release();
    await answersSent();
    expect(stream.written[1]).toEqual({ answers: [{ id: 2, payload: Buffer.from('done slow'), error: '' }] });
    expect(stream.ended).toBe(true);
  });

  it('sends the answers that finish in one task before the event loop turns, as one message', async () => {
    const stream = serve(async (payload) => Buffer.from(`done ${payload.toString()}`));
    stream.emit('data', { calls: [{ id: 1, payload: Buffer.from('a') }, { id: 2, payload: Buffer.from('b') }] });
    // Microtasks only: answers held for the next turn of the event loop would not be written yet.
    for (let i = 0; i < 10; i++) await Promise.resolve();
    expect(stream.written).toEqual([{ answers: [
      { id: 1, payload: Buffer.from('done a'), error: '' },
      { id: 2, payload: Buffer.from('done b'), error: '' },
    ] }]);
  });

  it('ends at once a stream the caller ended with nothing running', () => {
    const stream = serve(async () => Buffer.alloc(0));
    stream.emit('end');
    expect(stream.ended).toBe(true);
  });
});
