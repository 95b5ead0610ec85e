import { Metadata, type Client, type ClientDuplexStream, type MethodDefinition, type ServerDuplexStream } from '@grpc/grpc-js';
import type { WireCallRequest, WireCallRequests, WireCallResponse, WireCallResponses } from './raft-proto';

/**
 * A call to another member that did not get an answer: the stream to it failed or closed, or
 * its handler failed. The request may or may not have been carried out.
 */
export class MemberCallError extends Error {
  constructor(message: string, readonly address: string) {
    super(message);
    this.name = 'MemberCallError';
  }
}

/** What a member does with a call it receives: the answer's payload. */
export type CallHandler = (payload: Buffer) => Promise<Buffer>;

/** Room for a call's own framing (id, field tags) within the transport's message limit. */
const CALL_FRAMING_BYTES = 64;

/**
 * Items gathered and sent as one message, so that many of them cost one gRPC message rather
 * than one each. Calls are gathered for a turn of the event loop: a busy standby handles each
 * request it forwards in a task of its own. Answers only to the end of the task: the writes that
 * one apply batch settles finish in one task, and waiting a turn of the active node's loop would
 * hold them behind every request that arrived meanwhile. A message never passes the transport's
 * limit: an item that would take it past sends what was gathered first.
 */
class Outbox<T extends { payload: Buffer }> {
  private items: T[] = [];
  private bytes = 0;
  private scheduled = false;

  constructor(
    private readonly maxMessageBytes: number,
    private readonly gather: 'turn' | 'task',
    private readonly send: (items: T[]) => void,
  ) {}

  add(item: T): void {
    const size = item.payload.length + CALL_FRAMING_BYTES;
    if (this.items.length > 0 && this.bytes + size > this.maxMessageBytes) this.flush();
    this.items.push(item);
    this.bytes += size;
    if (!this.scheduled) {
      this.scheduled = true;
      if (this.gather === 'turn') setImmediate(() => this.flush());
      else queueMicrotask(() => this.flush());
    }
  }

  get empty(): boolean {
    return this.items.length === 0;
  }

  flush(): void {
    this.scheduled = false;
    if (this.items.length === 0) return;
    const items = this.items;
    this.items = [];
    this.bytes = 0;
    this.send(items);
  }
}

interface Pending {
  resolve(payload: Buffer): void;
  reject(err: Error): void;
}

/**
 * The calls of this node to one member: one long-lived bidirectional stream over a client of
 * its own, requests numbered, answers matched by number in whatever order they come. A failed
 * stream fails every call waiting on it, and the next call dials again.
 */
export class CallChannel {
  private stream: ClientDuplexStream<WireCallRequests, WireCallResponses> | null = null;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private closed = false;
  private readonly outbox: Outbox<WireCallRequest>;

  constructor(
    readonly address: string,
    private readonly client: Client,
    private readonly method: MethodDefinition<WireCallRequests, WireCallResponses>,
    /** The transport's message limit: a larger message would break the stream for every call on it. */
    private readonly maxMessageBytes: number,
  ) {
    this.outbox = new Outbox(maxMessageBytes, 'turn', (calls) => {
      // Calls whose stream failed while they waited to be sent were failed with it already.
      const waiting = calls.filter((c) => this.pending.has(c.id));
      if (waiting.length > 0) this.open().write({ calls: waiting });
    });
  }

  /** Calls waiting for an answer. */
  get waiting(): number {
    return this.pending.size;
  }

  call(payload: Buffer): Promise<Buffer> {
    if (this.closed) return Promise.reject(new MemberCallError('the call channel is closed', this.address));
    if (payload.length > this.maxMessageBytes - CALL_FRAMING_BYTES) {
      return Promise.reject(new MemberCallError(`the request is larger than the ${this.maxMessageBytes}-byte message limit between members`, this.address));
    }
    this.open();
    const id = this.nextId++;
    return new Promise<Buffer>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.outbox.add({ id, payload });
    });
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    const stream = this.stream;
    this.failAll(stream, 'the call channel was closed');
    stream?.cancel();
    this.client.close();
  }

  private open(): ClientDuplexStream<WireCallRequests, WireCallResponses> {
    if (this.stream) return this.stream;
    const m = this.method;
    const stream = this.client.makeBidiStreamRequest(m.path, m.requestSerialize, m.responseDeserialize, new Metadata());
    stream.on('data', (message: WireCallResponses) => {
      for (const answer of message.answers) {
        const waiting = this.pending.get(answer.id);
        if (!waiting) continue;
        this.pending.delete(answer.id);
        if (answer.error) waiting.reject(new MemberCallError(answer.error, this.address));
        else waiting.resolve(answer.payload);
      }
    });
    stream.on('error', (err: Error) => this.failAll(stream, err.message));
    stream.on('end', () => this.failAll(stream, 'the member closed the stream'));
    this.stream = stream;
    return stream;
  }

  private failAll(stream: ClientDuplexStream<WireCallRequests, WireCallResponses> | null, reason: string): void {
    if (this.stream !== stream) return;
    this.stream = null;
    const waiting = [...this.pending.values()];
    this.pending.clear();
    for (const w of waiting) w.reject(new MemberCallError(`no answer from ${this.address}: ${reason}`, this.address));
  }
}

/**
 * The receiving end of one caller's stream: each request goes to the handler at once (they
 * run concurrently) and each answer is sent when it is ready, with the others ready in the same
 * turn. A handler's failure answers that request with its message; the stream ends once the
 * caller ended it and every answer was written.
 */
export function serveCalls(
  call: ServerDuplexStream<WireCallRequests, WireCallResponses>, handler: () => CallHandler | null, maxMessageBytes: number,
): void {
  let running = 0;
  let ended = false;
  let finished = false;
  const finishIfDone = () => {
    if (finished || !ended || running > 0 || !outbox.empty) return;
    finished = true;
    call.end();
  };
  const outbox: Outbox<WireCallResponse> = new Outbox<WireCallResponse>(maxMessageBytes, 'task', (answers) => {
    if (!call.cancelled && !call.destroyed) call.write({ answers });
    finishIfDone();
  });
  const answer = (response: WireCallResponse) => {
    running--;
    outbox.add(response);
  };
  const serve = (request: WireCallRequest) => {
    running++;
    const run = handler();
    if (!run) {
      answer({ id: request.id, payload: Buffer.alloc(0), error: 'this member does not serve calls yet' });
      return;
    }
    run(request.payload).then(
      (payload) => answer(payload.length > maxMessageBytes - CALL_FRAMING_BYTES
        ? { id: request.id, payload: Buffer.alloc(0), error: `the answer is larger than the ${maxMessageBytes}-byte message limit between members` }
        : { id: request.id, payload, error: '' }),
      (err: unknown) => answer({ id: request.id, payload: Buffer.alloc(0), error: err instanceof Error ? err.message : String(err) }),
    );
  };
  call.on('data', (message: WireCallRequests) => {
    for (const request of message.calls) serve(request);
  });
  call.on('end', () => {
    ended = true;
    if (running === 0) outbox.flush();
    finishIfDone();
  });
  // A cancelled or broken stream has nobody left to answer; running handlers finish unheard.
  call.on('error', () => {});
}
