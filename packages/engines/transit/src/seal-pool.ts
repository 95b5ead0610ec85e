import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { standardBase64, strictBase64 } from './codec';
import { AEAD_NONCE_SIZE, AEAD_TAG_SIZE, type AeadKeyType } from './crypto';
import { AEAD_CIPHER_NAMES } from './crypto/aead';
import { keyObjectOf } from './crypto/key-objects';

interface SealRequest {
  id: number;
  cipher: string;
  key: unknown;
  /** Put in front of each ciphertext's base64 (`vault:v1:`). */
  prefix: string;
  /** Base64, as the caller sent them. */
  plaintexts: string[];
  tagLength: number;
  nonceLength: number;
}

/** Per plaintext: its ciphertext, or null when it was not standard base64. */
type SealAnswer = { id: number; out: Array<string | null> } | { id: number; error: string };

/**
 * A pool thread's whole program. It is handed to the thread as source text after the base64
 * decoders' source, so it uses nothing from this module: only `decode` (standardBase64, passed
 * in because an imported name would not resolve there) and what it requires itself. Nonces
 * come from its own pool of random bytes, as on the main thread. An error answer carries only
 * the error's message, which for these calls never holds key material or plaintext.
 */
function threadProgram(decode: (value: string) => Buffer | null): void {
  // No optional chaining or other syntax a transpiler may turn into calls of its own helpers.
  const port = (require('node:worker_threads') as typeof import('node:worker_threads')).parentPort as import('node:worker_threads').MessagePort;
  const { createCipheriv, randomFillSync } = require('node:crypto') as typeof import('node:crypto');
  let pool = Buffer.alloc(0);
  let pos = 0;
  // Each payload (up to 64 KiB) is put together here and read out as base64 at once: no Buffer per item for it.
  let payload = Buffer.alloc(0);
  port.on('message', (msg: SealRequest) => {
    try {
      const out = new Array<string | null>(msg.plaintexts.length);
      for (let i = 0; i < out.length; i++) {
        const plaintext = decode(msg.plaintexts[i] as string);
        if (!plaintext) {
          out[i] = null;
          continue;
        }
        if (pos + msg.nonceLength > pool.length) {
          if (pool.length === 0) pool = Buffer.allocUnsafe(msg.nonceLength * 4096);
          randomFillSync(pool);
          pos = 0;
        }
        const nonce = pool.subarray(pos, pos + msg.nonceLength);
        pos += msg.nonceLength;
        const cipher = createCipheriv(msg.cipher as 'aes-256-gcm', msg.key as import('node:crypto').KeyObject, nonce, { authTagLength: msg.tagLength });
        const sealed = cipher.update(plaintext);
        const final = cipher.final();
        const tag = cipher.getAuthTag();
        const size = nonce.length + sealed.length + final.length + tag.length;
        let into: Buffer;
        // A rare large item gets a buffer of its own rather than one the thread keeps.
        if (size > 65536) {
          into = Buffer.allocUnsafe(size);
        } else {
          if (payload.length < size) payload = Buffer.allocUnsafe(Math.max(size, 4096));
          into = payload;
        }
        let at = nonce.copy(into, 0);
        at += sealed.copy(into, at);
        at += final.copy(into, at);
        tag.copy(into, at);
        out[i] = msg.prefix + into.toString('base64', 0, size);
      }
      port.postMessage({ id: msg.id, out });
    } catch (err) {
      port.postMessage({ id: msg.id, error: err instanceof Error ? err.message : String(err) });
    }
  });
}

const THREAD_SOURCE = `${strictBase64.toString()}\n${standardBase64.toString()}\n(${threadProgram.toString()})(${standardBase64.name})`;

/** Fewer plaintexts than this per thread cost more in messages than they save. */
const MIN_PER_THREAD = 32;

interface PoolThread {
  worker: Worker;
  pending: Map<number, { resolve(out: Array<string | null>): void; reject(err: Error): void }>;
}

/**
 * Threads for the per-item work of large encrypt batches (base64 decoding, sealing, the
 * ciphertext's text), one per core, so that a batch uses every core while the request's thread
 * parses and answers. Threads start on first use, each is held open only while it has work
 * (an idle pool never keeps the process alive), and one that fails is replaced on next use.
 * A thread gets the cipher's name, the key as a KeyObject and the plaintexts, nothing of the process.
 */
export class SealPool {
  private readonly threads: Array<PoolThread | null>;
  private nextId = 1;

  constructor(readonly size: number = availableParallelism()) {
    this.threads = new Array<PoolThread | null>(Math.max(1, size)).fill(null);
  }

  /**
   * Decodes and seals each base64 plaintext with a fresh random nonce under `key`; answers
   * `prefix` plus the base64 of nonce ‖ ciphertext ‖ tag for each, in order, or null for one that
   * is not standard base64. Rejects if a thread fails; the caller can then do the work itself.
   */
  seal(type: AeadKeyType, key: Buffer, prefix: string, plaintexts: readonly string[]): Promise<Array<string | null>> {
    const parts = Math.max(1, Math.min(this.threads.length, Math.floor(plaintexts.length / MIN_PER_THREAD)));
    const per = Math.ceil(plaintexts.length / parts);
    const keyObject = keyObjectOf(key);
    const answers: Array<Promise<Array<string | null>>> = [];
    for (let p = 0; p < parts; p++) {
      answers.push(this.send(p, {
        id: this.nextId++, cipher: AEAD_CIPHER_NAMES[type], key: keyObject, prefix,
        plaintexts: plaintexts.slice(p * per, (p + 1) * per), tagLength: AEAD_TAG_SIZE, nonceLength: AEAD_NONCE_SIZE,
      }));
    }
    return parts === 1 ? answers[0] as Promise<Array<string | null>> : Promise.all(answers).then((outs) => outs.flat());
  }

  private send(slot: number, request: SealRequest): Promise<Array<string | null>> {
    let thread: PoolThread;
    try {
      thread = this.start(slot);
    } catch (err) {
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
    return new Promise((resolve, reject) => {
      thread.pending.set(request.id, { resolve, reject });
      // Held open only while it has work: an idle thread must not keep the process running.
      if (thread.pending.size === 1) thread.worker.ref();
      thread.worker.postMessage(request);
    });
  }

  private start(slot: number): PoolThread {
    const running = this.threads[slot];
    if (running) return running;
    // No environment, arguments or preloaded modules of the process: the thread needs none of them.
    const worker = new Worker(THREAD_SOURCE, { eval: true, env: {}, argv: [], execArgv: [], stdin: false });
    worker.unref();
    const thread: PoolThread = { worker, pending: new Map() };
    worker.on('message', (answer: SealAnswer) => {
      const waiting = thread.pending.get(answer.id);
      if (!waiting) return;
      thread.pending.delete(answer.id);
      if (thread.pending.size === 0) worker.unref();
      if ('error' in answer) waiting.reject(new Error(answer.error));
      else waiting.resolve(answer.out);
    });
    const fail = (err: Error) => {
      if (this.threads[slot] !== thread) return;
      this.threads[slot] = null;
      const waiting = [...thread.pending.values()];
      thread.pending.clear();
      for (const w of waiting) w.reject(err);
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`a seal pool thread exited (code ${code})`)));
    this.threads[slot] = thread;
    return thread;
  }

  /** Stops every thread; the next seal starts them again. */
  async stop(): Promise<void> {
    await Promise.all(this.threads.map((t) => t?.worker.terminate()));
  }
}

export const sealPool = new SealPool();
