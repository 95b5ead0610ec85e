import { Metadata, type Client, type ClientDuplexStream, type MethodDefinition, type ServerDuplexStream } from '@grpc/grpc-js';
import type { WireCallRequest, WireCallResponse } from './raft-proto';

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
  private stream: ClientDuplexStream<WireCallRequest, WireCallResponse> | null = null;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private closed = false;

  constructor(
    readonly address: string,
    private readonly client: Client,
    private readonly method: MethodDefinition<WireCallRequest, WireCallResponse>,
    /** The transport's message limit: a larger message would break the stream for every call on it. */
    private readonly maxMessageBytes: number,
  ) {}

  /** Calls waiting for an answer. */
  get waiting(): number {
    return this.pending.size;
  }

  call(payload: Buffer): Promise<Buffer> {
    if (this.closed) return Promise.reject(new MemberCallError('the call channel is closed', this.address));
    if (payload.length > this.maxMessageBytes - CALL_FRAMING_BYTES) {
      return Promise.reject(new MemberCallError(`the request is larger than the ${this.maxMessageBytes}-byte message limit between members`, this.address));
    }
    const stream = this.open();
    const id = this.nextId++;
    return new Promise<Buffer>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      stream.write({ id, payload });
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

  private open(): ClientDuplexStream<WireCallRequest, WireCallResponse> {
    if (this.stream) return this.stream;
    const m = this.method;
    const stream = this.client.makeBidiStreamRequest(m.path, m.requestSerialize, m.responseDeserialize, new Metadata());
    stream.on('data', (answer: WireCallResponse) => {
      const waiting = this.pending.get(answer.id);
      if (!waiting) return;
      this.pending.delete(answer.id);
      if (answer.error) waiting.reject(new MemberCallError(answer.error, this.address));
      else waiting.resolve(answer.payload);
    });
    stream.on('error', (err: Error) => this.failAll(stream, err.message));
    stream.on('end', () => this.failAll(stream, 'the member closed the stream'));
    this.stream = stream;
    return stream;
  }

  private failAll(stream: ClientDuplexStream<WireCallRequest, WireCallResponse> | null, reason: string): void {
    if (this.stream !== stream) return;
    this.stream = null;
    const waiting = [...this.pending.values()];
    this.pending.clear();
    for (const w of waiting) w.reject(new MemberCallError(`no answer from ${this.address}: ${reason}`, this.address));
  }
}

/**
 * The receiving end of one caller's stream: each request goes to the handler at once (they
 * run concurrently) and each answer is written when it is ready. A handler's failure answers
 * that request with its message; the stream ends once the caller ended it and every answer
 * was written.
 */
export function serveCalls(
  call: ServerDuplexStream<WireCallRequest, WireCallResponse>, handler: () => CallHandler | null, maxMessageBytes: number,
): void {
  let running = 0;
  let ended = false;
  const answer = (response: WireCallResponse) => {
    if (!call.cancelled && !call.destroyed) call.write(response);
    if (--running === 0 && ended) call.end();
  };
  call.on('data', (request: WireCallRequest) => {
    running++;
    const serve = handler();
    if (!serve) {
      answer({ id: request.id, payload: Buffer.alloc(0), error: 'this member does not serve calls yet' });
      return;
    }
    serve(request.payload).then(
      (payload) => answer(payload.length > maxMessageBytes - CALL_FRAMING_BYTES
        ? { id: request.id, payload: Buffer.alloc(0), error: `the answer is larger than the ${maxMessageBytes}-byte message limit between members` }
        : { id: request.id, payload, error: '' }),
      (err: unknown) => answer({ id: request.id, payload: Buffer.alloc(0), error: err instanceof Error ? err.message : String(err) }),
    );
  });
  call.on('end', () => {
    ended = true;
    if (running === 0) call.end();
  });
  // A cancelled or broken stream has nobody left to answer; running handlers finish unheard.
  call.on('error', () => {});
}
