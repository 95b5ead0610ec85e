/**
 * A Core over in-memory storage and a fake clock, initialized and unsealed, for tests that go
 * through `core.handle` the way the HTTP layer does. Errors come back as replies
 * (`{status, body: {errors}}`) so tests can assert on them like on an HTTP answer.
 *
 * - `rig(options)`: an initialized, unsealed Core with its root token, key shares and helpers.
 * - `newCore(options)` and `callCore`/`okCore`: a bare Core (uninitialized, or brought up by hand).
 * - `failure(reply)`: the status and message of a request that must fail.
 * - `data(reply)`: the `data` of a reply's envelope.
 */
import { FakeClock } from '../clock';
import { Core } from '../core';
import { StrongroomError } from '../errors';
import type { EngineFactory } from '../framework/engine';
import type { Operation } from '../framework/types';
import { silentLogger } from '../logger';
import { MemoryStorage } from '../storage/memory-storage';
import type { Storage } from '../storage/storage';

export const START = Date.UTC(2026, 0, 1);

/** A JSON object of a reply, for the fields tests look at. */
export type Body = Record<string, unknown>;

export interface Reply {
  status: number;
  // Vault's reply envelope, loosely typed: tests assert on its fields.
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

/** What a failed request answered: its status and its error message. */
export interface Failure {
  status: number;
  message: string;
}

export interface Rig<S extends Storage = Storage> {
  /** The current Core; replaced by `restart`. */
  readonly core: Core;
  clock: FakeClock;
  storage: S;
  root: string;
  /** The first key share (all it takes with the default single share). */
  key: Buffer;
  /** Every key share made at init; the rig unseals with the first `threshold` of them. */
  keys: Buffer[];
  /** Sends a request; a StrongroomError becomes `{ status, body: { errors } }` as the API would answer. */
  call(op: Operation, path: string, token: string | undefined, data?: Record<string, unknown>, remoteAddress?: string): Promise<Reply>;
  /** Like `call`, but throws unless the reply is a success. */
  ok(op: Operation, path: string, token: string | undefined, data?: Record<string, unknown>, remoteAddress?: string): Promise<Reply>;
  /** Creates a token with `auth/token/create` as `parent` and returns its `auth` block. */
  token(parent: string, data?: Record<string, unknown>): Promise<any>; // eslint-disable-line @typescript-eslint/no-explicit-any
  /** Writes an ACL policy as the root token. */
  policy(name: string, text: string): Promise<void>;
  /** Writes the policy `name` and returns the ID of a new child of the root token that holds it. */
  tokenWithPolicy(name: string, text: string): Promise<string>;
  /**
   * Writes each policy under its key with a number of its own appended, and returns the ID of a new
   * child of the root token that holds them all; the numbers let many tests name their policies `p`.
   */
  tokenWithPolicies(policies: Record<string, string>): Promise<string>;
  /** Whether the token is accepted (lookup-self answers 200 rather than 403). */
  works(token: string, remoteAddress?: string): Promise<boolean>;
  /** Whether the token's entry is still in storage. */
  stored(token: string): Promise<boolean>;
  /** Closes the Core, runs `meanwhile`, and unseals a new Core over the same storage and clock. */
  restart(meanwhile?: () => Promise<void>): Promise<void>;
}

/** How to build a Core: by default over a new MemoryStorage and a FakeClock at START, with no engines. */
export interface CoreSetup<S extends Storage = Storage> {
  storage?: S;
  clock?: FakeClock;
  engines?: EngineFactory[];
  clusterName?: string;
  storageType?: string;
}

export interface RigOptions<S extends Storage = Storage> extends CoreSetup<S> {
  /** Key shares to make at init (default 1). */
  shares?: number;
  /** Shares it takes to unseal (default 1). */
  threshold?: number;
}

export function newCore(options: CoreSetup = {}): Core {
  return new Core({
    storage: options.storage ?? new MemoryStorage(), clock: options.clock ?? new FakeClock(START), logger: silentLogger,
    engines: options.engines ?? [],
    ...(options.clusterName !== undefined ? { clusterName: options.clusterName } : {}),
    ...(options.storageType !== undefined ? { storageType: options.storageType } : {}),
  });
}

/** Sends a request to `core`; a StrongroomError becomes a reply, any other error is thrown. */
export async function callCore(
  core: Core, operation: Operation, path: string, token: string | undefined, data: Record<string, unknown> = {}, remoteAddress?: string,
): Promise<Reply> {
  try {
    return await core.handle({
      operation, path, data, ...(token !== undefined ? { token } : {}), ...(remoteAddress ? { remoteAddress } : {}),
    });
  } catch (err) {
    if (err instanceof StrongroomError) return { status: err.status, body: { errors: err.message === '' ? [] : [err.message] } };
    throw err;
  }
}

/** Like `callCore`, but throws unless the reply is a success. */
export async function okCore(
  core: Core, operation: Operation, path: string, token: string | undefined, data: Record<string, unknown> = {}, remoteAddress?: string,
): Promise<Reply> {
  const reply = await callCore(core, operation, path, token, data, remoteAddress);
  if (reply.status >= 300) throw new Error(`${operation} ${path} answered ${reply.status}: ${JSON.stringify(reply.body)}`);
  return reply;
}

/** The error a request answered with; throws if it answered anything but an error. */
export async function failure(reply: Promise<Reply>): Promise<Failure> {
  const { status, body } = await reply;
  const errors: unknown = body?.errors;
  if (status < 400 || !Array.isArray(errors)) throw new Error(`expected the request to fail, it answered ${status}: ${JSON.stringify(body)}`);
  return { status, message: errors.join('; ') };
}

/** The `data` of a reply's envelope. */
export function data(reply: Reply): Body {
  return reply.body.data;
}

export async function rig<S extends Storage = MemoryStorage>(options: RigOptions<S> = {}): Promise<Rig<S>> {
  const storage = (options.storage ?? new MemoryStorage()) as S;
  const clock = options.clock ?? new FakeClock(START);
  const setup: CoreSetup = { ...options, storage, clock };
  let core = newCore(setup);
  const { keys, rootToken } = await core.initialize(options.shares ?? 1, options.threshold ?? 1);
  const unsealKeys = keys.slice(0, options.threshold ?? 1);
  for (const k of unsealKeys) await core.unseal(k);
  const call: Rig['call'] = (operation, path, token, data = {}, remoteAddress) => callCore(core, operation, path, token, data, remoteAddress);
  const ok: Rig['ok'] = (operation, path, token, data = {}, remoteAddress) => okCore(core, operation, path, token, data, remoteAddress);
  const token: Rig['token'] = async (parent, data = {}) => (await ok('update', 'auth/token/create', parent, data)).body.auth;
  const policy: Rig['policy'] = async (name, text) => {
    await ok('update', `sys/policies/acl/${name}`, rootToken, { policy: text });
  };
  let policiesMade = 0;
  return {
    get core() {
      return core;
    },
    clock, storage, root: rootToken, key: keys[0] as Buffer, keys, call, ok, token, policy,
    async tokenWithPolicy(name, text) {
      await policy(name, text);
      return (await token(rootToken, { policies: [name] })).client_token;
    },
    async tokenWithPolicies(policies) {
      const names: string[] = [];
      for (const [name, text] of Object.entries(policies)) {
        const unique = `${name}-${++policiesMade}`;
        await policy(unique, text);
        names.push(unique);
      }
      return (await token(rootToken, { policies: names })).client_token;
    },
    async works(clientToken, remoteAddress) {
      const reply = await call('read', 'auth/token/lookup-self', clientToken, {}, remoteAddress);
      if (reply.status === 200) return true;
      if (reply.status === 403) return false;
      throw new Error(`lookup-self answered ${reply.status}: ${JSON.stringify(reply.body)}`);
    },
    async stored(clientToken) {
      return (await core.barrier.list('sys/token/id/')).includes(core.tokens.hash(clientToken));
    },
    async restart(meanwhile) {
      await core.close();
      if (meanwhile) await meanwhile();
      core = newCore(setup);
      for (const k of unsealKeys) await core.unseal(k);
    },
  };
}
