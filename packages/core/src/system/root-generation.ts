import { randomUUID, timingSafeEqual } from 'node:crypto';
import type * as OpenPGP from 'openpgp';
import { BadRequestError, SealedError } from '../errors';
import { combineShares } from '../seal/shamir';
import { randomBase62, SERVICE_TOKEN_LENGTH } from '../token/token-id';

/** What a token generation needs of the seal: SealManager has it. */
export interface ShareCheck {
  /** How many shares operators hold and how many it takes (the recovery key's under an auto seal); null before init. */
  keyShareConfig(): Promise<{ shares: number; threshold: number; recovery: boolean } | null>;
  /** Whether the shares that combined into `combined` are this server's (its root key, or its recovery key). */
  checkCombinedKey(combined: Buffer): Promise<boolean>;
}

/** A single share is the key itself; a Shamir share carries one extra byte (its x coordinate). */
function shareLength(config: { shares: number }): number {
  return config.shares === 1 ? 32 : 33;
}

/** The reply of every generation endpoint, with Vault's field names (all always present). */
export interface GenerationStatus {
  started: boolean;
  nonce: string;
  progress: number;
  required: number;
  complete: boolean;
  encoded_token: string;
  encoded_root_token: string;
  pgp_fingerprint: string;
  /** Only in the reply that started an attempt with a server-made OTP; '' everywhere else. */
  otp: string;
  otp_length: number;
}

export interface TokenGenerationOptions {
  shares: ShareCheck;
  /** Makes the token once the shares proved to be this server's; returns its ID (SERVICE_TOKEN_LENGTH characters). */
  issue(): Promise<string>;
  /** Vault's root token generation also returns the result as `encoded_root_token`. */
  rootToken?: boolean;
  /** The token's name in error messages ("root token", "DR operation token"). */
  what: string;
  /** Given, a generation is refused while it says the node is sealed (a path a sealed node answers itself). */
  sealed?(): boolean;
  /** Told the combined key once the shares proved to be this server's (a DR secondary keeps its primary's root key). */
  proven?(combined: Buffer, recovery: boolean): void;
}

export interface StartOptions {
  /** A caller-made OTP (older Vault clients send one); made by the server when neither is given. */
  otp?: string;
  /** A base64 binary (or armored) OpenPGP public key that the result is encrypted to. */
  pgpKey?: string;
}

interface Attempt {
  nonce: string;
  /** Kept to encode the result; shown once, in the reply that started the attempt. */
  otp: string | null;
  pgpKey: OpenPGP.PublicKey | null;
  pgpFingerprint: string;
  shares: Buffer[];
}

let openpgp: Promise<typeof OpenPGP> | null = null;

/** Loaded on first use: most servers never see a PGP key, and the library is large. */
function loadOpenpgp(): Promise<typeof OpenPGP> {
  openpgp ??= import('openpgp');
  return openpgp;
}

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
const OTP_FORM = new RegExp(`^[0-9A-Za-z]{${SERVICE_TOKEN_LENGTH}}$`);

/**
 * Vault's generation of a token from a quorum of unseal key shares, shared by `sys/generate-root`
 * and the DR operation token: start an attempt (a nonce, and an OTP or a PGP key to protect the
 * result), give shares with the nonce until the threshold, then the token is made and handed
 * back encoded. One attempt at a time. The attempt and its shares live only in this process's
 * memory, as in Vault: key shares must never reach storage (the Raft log, snapshots and
 * replication would carry them), and a lost attempt costs only starting again.
 */
export class TokenGeneration {
  private attempt: Attempt | null = null;
  /** Every change of the attempt runs alone: an update reads and changes it across awaits. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly options: TokenGenerationOptions) {}

  async status(): Promise<GenerationStatus> {
    const config = await this.options.shares.keyShareConfig();
    const a = this.attempt;
    return {
      started: a !== null, nonce: a?.nonce ?? '', progress: a?.shares.length ?? 0, required: config?.threshold ?? 0,
      complete: false, encoded_token: '', encoded_root_token: '', pgp_fingerprint: a?.pgpFingerprint ?? '', otp: '',
      otp_length: SERVICE_TOKEN_LENGTH,
    };
  }

  start(options: StartOptions): Promise<GenerationStatus> {
    return this.serially(async () => {
      const { what } = this.options;
      if (this.options.sealed?.()) throw new SealedError();
      if (this.attempt) {
        throw new BadRequestError(`a ${what} generation attempt is already in progress: only one may run at a time; cancel it first (DELETE the attempt)`);
      }
      if (!(await this.options.shares.keyShareConfig())) throw new BadRequestError('server is not initialized');
      const given = options.otp ?? '';
      const pgpText = options.pgpKey ?? '';
      if (given !== '' && pgpText !== '') throw new BadRequestError('invalid value for "otp": give either "otp" or "pgp_key", not both');
      if (given !== '' && !OTP_FORM.test(given)) {
        throw new BadRequestError(`invalid value for "otp": must be ${SERVICE_TOKEN_LENGTH} base62 characters, the length of a token (or leave it out and the server makes one)`);
      }
      const pgp = pgpText === '' ? null : await readPgpKey(pgpText);
      const made = given === '' && !pgp ? randomBase62(SERVICE_TOKEN_LENGTH) : null;
      this.attempt = {
        nonce: randomUUID(), otp: pgp ? null : made ?? given, pgpKey: pgp?.key ?? null, pgpFingerprint: pgp?.fingerprint ?? '', shares: [],
      };
      return { ...(await this.status()), otp: made ?? '' };
    });
  }

  /** Cancels the attempt in progress, if any, and forgets its shares. */
  cancel(): Promise<void> {
    return this.serially(async () => this.reset());
  }

  /** Forgets the attempt at once (the node sealed or stopped serving). */
  reset(): void {
    for (const s of this.attempt?.shares ?? []) s.fill(0);
    this.attempt = null;
  }

  /**
   * Adds one key share. At the threshold the shares are combined and checked the way unseal
   * checks them; shares that are not this server's reset the progress (the attempt, its nonce
   * and its OTP stay), as Vault does. On success the attempt ends.
   */
  update(share: Buffer, nonce: string): Promise<GenerationStatus> {
    return this.serially(async () => {
      const { what } = this.options;
      if (this.options.sealed?.()) throw new SealedError();
      const attempt = this.attempt;
      if (!attempt) throw new BadRequestError(`no ${what} generation attempt is in progress: start one first`);
      if (nonce !== attempt.nonce) throw new BadRequestError('invalid value for "nonce": it is not the nonce of the attempt in progress');
      const config = await this.options.shares.keyShareConfig();
      if (!config) throw new BadRequestError('server is not initialized');
      const expected = shareLength(config);
      if (share.length !== expected) {
        throw new BadRequestError(`invalid value for "key": ${config.recovery ? 'a recovery' : 'an unseal'} key share of this server is ${expected} bytes, this one is ${share.length}`);
      }
      if (attempt.shares.some((s) => s.length === share.length && timingSafeEqual(s, share))) {
        throw new BadRequestError('invalid value for "key": this key share was already given in this attempt');
      }
      attempt.shares.push(Buffer.from(share));
      if (attempt.shares.length < config.threshold) return this.status();

      const shares = attempt.shares;
      attempt.shares = [];
      let rootKey: Buffer | null = null;
      try {
        rootKey = await combineShares(shares);
      } catch {
        // Shares of different splits, or with a repeated x coordinate: not this server's root key.
      } finally {
        for (const s of shares) s.fill(0);
      }
      const proven = rootKey !== null && (await this.options.shares.checkCombinedKey(rootKey));
      if (proven && rootKey) this.options.proven?.(rootKey, config.recovery);
      rootKey?.fill(0);
      if (!proven) {
        throw new BadRequestError(`invalid value for "key": the key shares given do not reconstruct the root key; the ${what} generation progress was reset`);
      }
      const token = await this.options.issue();
      const encoded = await encode(token, attempt);
      this.attempt = null;
      return {
        started: true, nonce: attempt.nonce, progress: config.threshold, required: config.threshold, complete: true,
        encoded_token: encoded, encoded_root_token: this.options.rootToken ? encoded : '', pgp_fingerprint: attempt.pgpFingerprint,
        otp: '', otp_length: SERVICE_TOKEN_LENGTH,
      };
    });
  }

  private serially<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn);
    this.queue = run.catch(() => undefined);
    return run;
  }
}

async function encode(token: string, attempt: Attempt): Promise<string> {
  if (attempt.pgpKey) {
    const pgp = await loadOpenpgp();
    const message = await pgp.createMessage({ binary: new Uint8Array(Buffer.from(token, 'utf8')) });
    const encrypted = await pgp.encrypt({ message, encryptionKeys: attempt.pgpKey, format: 'binary' });
    return Buffer.from(encrypted).toString('base64');
  }
  const otp = Buffer.from(attempt.otp ?? '', 'utf8');
  const raw = Buffer.from(token, 'utf8');
  if (raw.length !== otp.length) throw new Error('the new token and the one-time password differ in length');
  return Buffer.from(raw.map((b, i) => b ^ (otp[i] as number))).toString('base64');
}

/** Reads the key the way Vault takes it (base64 of the binary key), and an armored key too. */
async function readPgpKey(text: string): Promise<{ key: OpenPGP.PublicKey; fingerprint: string }> {
  const pgp = await loadOpenpgp();
  const trimmed = text.trim();
  const compact = trimmed.replace(/\s+/g, '');
  try {
    const key = trimmed.startsWith('-----BEGIN')
      ? await pgp.readKey({ armoredKey: trimmed })
      : BASE64.test(compact) ? await pgp.readKey({ binaryKey: new Uint8Array(Buffer.from(compact, 'base64')) }) : null;
    if (!key) throw new Error('not base64');
    // A key that cannot encrypt (expired, revoked, signing only) is refused now, not at the last share.
    await key.getEncryptionKey();
    return { key: key.toPublic(), fingerprint: key.getFingerprint() };
  } catch {
    throw new BadRequestError('invalid value for "pgp_key": must be a base64-encoded binary OpenPGP public key that can encrypt');
  }
}
