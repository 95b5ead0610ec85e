import { createSecretKey, randomBytes, type KeyObject } from 'node:crypto';
import { open, seal } from './aead';

export interface KeyTerm {
  term: number;
  key: Buffer;
  /** The same key as a KeyObject: building one per operation costs more than the AES itself. */
  keyObject: KeyObject;
  installTime: string;
}

function makeTerm(term: number, key: Buffer, installTime: string): KeyTerm {
  return { term, key, keyObject: createSecretKey(key), installTime };
}

interface StoredKeyring {
  terms: { term: number; key: string; install_time: string }[];
}

const KEYRING_AAD = Buffer.from('core/keyring');

/**
 * The barrier's data keys, one per term. New data is always written under the newest term;
 * older terms stay to read what they wrote. The keyring itself is stored encrypted under the
 * root key, which only exists in memory while unsealed.
 */
export class Keyring {
  private readonly terms = new Map<number, KeyTerm>();
  private active: KeyTerm;

  private constructor(terms: KeyTerm[]) {
    for (const t of terms) this.terms.set(t.term, t);
    this.active = terms.reduce((a, b) => (b.term > a.term ? b : a));
  }

  static create(now: Date): Keyring {
    return new Keyring([makeTerm(1, randomBytes(32), now.toISOString())]);
  }

  static open(rootKey: Buffer, sealed: Buffer): Keyring {
    const stored = JSON.parse(open(rootKey, sealed, KEYRING_AAD).toString('utf8')) as StoredKeyring;
    return new Keyring(stored.terms.map((t) => makeTerm(t.term, Buffer.from(t.key, 'base64'), t.install_time)));
  }

  seal(rootKey: Buffer): Buffer {
    const stored: StoredKeyring = {
      terms: [...this.terms.values()].map((t) => ({ term: t.term, key: t.key.toString('base64'), install_time: t.installTime })),
    };
    return seal(rootKey, Buffer.from(JSON.stringify(stored)), KEYRING_AAD);
  }

  get activeTerm(): KeyTerm {
    return this.active;
  }

  term(n: number): KeyTerm | undefined {
    return this.terms.get(n);
  }

  /** Adds a new term; the caller persists the keyring before using it. */
  rotate(now: Date): KeyTerm {
    const next = makeTerm(this.active.term + 1, randomBytes(32), now.toISOString());
    this.terms.set(next.term, next);
    this.active = next;
    return next;
  }

  /** Overwrites key material in memory when sealing. */
  wipe(): void {
    for (const t of this.terms.values()) t.key.fill(0);
    this.terms.clear();
  }
}
