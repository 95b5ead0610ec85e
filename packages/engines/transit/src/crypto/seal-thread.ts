import { Worker } from 'node:worker_threads';
import { AEAD_CIPHER_NAMES, AEAD_NONCE_SIZE, AEAD_TAG_SIZE } from './aead';
import { keyObjectOf } from './key-objects';
import type { AeadKeyType } from './key-types';

interface SealRequest {
  id: number;
  cipher: string;
  key: unknown;
  /** Put in front of each ciphertext's base64 (`vault:v1:`). */
  prefix: string;
  /** Every plaintext, one after another. */
  plaintexts: ArrayBuffer;
  lengths: number[];
  tagLength: number;
  nonceLength: number;
}

type SealAnswer = { id: number; out: string[] } | { id: number; error: string };

/**
 * The helper thread's whole program. It is handed to the thread as source text, so it uses
 * nothing from this module: only what it requires itself. Nonces come from its own pool of
 * random bytes, as on the main thread.
 */
function helperProgram(): void {
  const { parentPort } = require('node:worker_threads') as typeof import('node:worker_threads');
  const { createCipheriv, randomFillSync } = require('node:crypto') as typeof import('node:crypto');
  let pool = Buffer.alloc(0);
  let pos = 0;
  parentPort?.on('message', (msg: SealRequest) => {
    try {
      const out: string[] = new Array<string>(msg.lengths.length);
      let offset = 0;
      for (let i = 0; i < msg.lengths.length; i++) {
        const length = msg.lengths[i] as number;
        const plaintext = new Uint8Array(msg.plaintexts, offset, length);
        offset += length;
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
        out[i] = msg.prefix + Buffer.concat([nonce, sealed, final, cipher.getAuthTag()]).toString('base64');
      }
      parentPort?.postMessage({ id: msg.id, out });
    } catch (err) {
      parentPort?.postMessage({ id: msg.id, error: err instanceof Error ? err.message : String(err) });
    }
  });
}

/**
 * A second thread for the AEAD work of large batches, so that a batch uses both of a small
 * machine's cores: the request's thread seals part of the items while this one seals the rest.
 * One per process, started on first use; it never keeps the process alive on its own.
 */
class SealThread {
  private worker: Worker | null = null;
  private readonly pending = new Map<number, { resolve(out: string[]): void; reject(err: Error): void }>();
  private nextId = 1;

  /**
   * Seals each plaintext with a fresh random nonce under `key`; answers `prefix` plus the base64
   * of nonce ‖ ciphertext ‖ tag for each, in order. Rejects if the thread fails; the caller can
   * then seal them itself.
   */
  seal(type: AeadKeyType, key: Buffer, prefix: string, plaintexts: readonly Buffer[]): Promise<string[]> {
    let worker: Worker;
    try {
      worker = this.start();
    } catch (err) {
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
    let total = 0;
    for (const p of plaintexts) total += p.length;
    const packed = new ArrayBuffer(total);
    const view = new Uint8Array(packed);
    let offset = 0;
    for (const p of plaintexts) {
      view.set(p, offset);
      offset += p.length;
    }
    const id = this.nextId++;
    const request: SealRequest = {
      id, cipher: AEAD_CIPHER_NAMES[type], key: keyObjectOf(key), prefix, plaintexts: packed,
      lengths: plaintexts.map((p) => p.length), tagLength: AEAD_TAG_SIZE, nonceLength: AEAD_NONCE_SIZE,
    };
    return new Promise<string[]>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      // Held open only while it has work: an idle helper must not keep the process running.
      if (this.pending.size === 1) worker.ref();
      worker.postMessage(request, [packed]);
    });
  }

  private start(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(`(${helperProgram.toString()})()`, { eval: true });
    worker.unref();
    worker.on('message', (answer: SealAnswer) => {
      const waiting = this.pending.get(answer.id);
      if (!waiting) return;
      this.pending.delete(answer.id);
      if (this.pending.size === 0) worker.unref();
      if ('error' in answer) waiting.reject(new Error(answer.error));
      else waiting.resolve(answer.out);
    });
    const fail = (err: Error) => {
      if (this.worker !== worker) return;
      this.worker = null;
      const waiting = [...this.pending.values()];
      this.pending.clear();
      for (const w of waiting) w.reject(err);
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`the helper thread exited (code ${code})`)));
    this.worker = worker;
    return worker;
  }

  /** Stops the thread; the next seal starts another. */
  async stop(): Promise<void> {
    const worker = this.worker;
    if (!worker) return;
    await worker.terminate();
  }
}

export const sealThread = new SealThread();
