import { SealedError } from '../errors';
import type { LogicalStorage } from '../storage/logical';
import type { Storage, TxnOp } from '../storage/storage';
import { open, seal } from './aead';
import type { Keyring } from './keyring';

const FORMAT_VERSION = 1;
const HEADER = 5; // version byte + 32-bit term

/**
 * The encryption barrier: everything above it reads and writes plaintext, everything below it
 * (physical storage, Raft, snapshots, replication) only sees `version ‖ term ‖ AES-GCM(value)`.
 * The storage key is the AAD, so a ciphertext moved to another key does not decrypt.
 *
 * A few keys must be readable before unseal (the seal configuration, the encrypted keyring);
 * those bypass the barrier through `physical` and are never secret.
 */
export class Barrier implements LogicalStorage {
  private current: Keyring | null = null;

  constructor(readonly physical: Storage) {}

  get sealed(): boolean {
    return this.current === null;
  }

  unseal(keyring: Keyring): void {
    this.current = keyring;
  }

  seal(): void {
    this.current?.wipe();
    this.current = null;
  }

  /** The live keyring, for rotation and status; throws while sealed. */
  keyring(): Keyring {
    return this.ring();
  }

  private ring(): Keyring {
    if (!this.current) throw new SealedError();
    return this.current;
  }

  encrypt(key: string, plaintext: Buffer): Buffer {
    const term = this.ring().activeTerm;
    const header = Buffer.allocUnsafe(HEADER);
    header.writeUInt8(FORMAT_VERSION, 0);
    header.writeUInt32BE(term.term, 1);
    return seal(term.keyObject, plaintext, Buffer.from(key), header);
  }

  decrypt(key: string, value: Buffer): Buffer {
    if (value.length < HEADER || value.readUInt8(0) !== FORMAT_VERSION) throw new Error(`barrier: unknown format at ${key}`);
    const termNo = value.readUInt32BE(1);
    const term = this.ring().term(termNo);
    if (!term) throw new Error(`barrier: no key for term ${termNo} at ${key}`);
    return open(term.keyObject, value.subarray(HEADER), Buffer.from(key));
  }

  async get(key: string): Promise<Buffer | null> {
    this.ring();
    const value = await this.physical.get(key);
    return value === null ? null : this.decrypt(key, value);
  }

  async put(key: string, value: Buffer): Promise<void> {
    await this.physical.put(key, this.encrypt(key, value));
  }

  async delete(key: string): Promise<void> {
    this.ring();
    await this.physical.delete(key);
  }

  async list(prefix: string): Promise<string[]> {
    this.ring();
    return this.physical.list(prefix);
  }

  async txn(ops: TxnOp[]): Promise<void> {
    // A transaction of deletes only encrypts nothing, so check the seal explicitly.
    this.ring();
    await this.physical.txn(ops.map((op) => (op.type === 'put' ? { ...op, value: this.encrypt(op.key, op.value) } : op)));
  }
}
