/**
 * A Core over in-memory storage and a fake clock, initialized with one key share and unsealed,
 * for tests that go through `core.handle` the way the HTTP layer does. Errors come back as
 * replies (`{status, body: {errors}}`) so tests can assert on them like on an HTTP answer.
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

export interface Reply {
  status: number;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

export interface Rig {
  /** The current Core; replaced by `restart`. */
  readonly core: Core;
  clock: FakeClock;
  storage: Storage;
  root: string;
  key: Buffer;
  call(op: Operation, path: string, token: string | undefined, data?: Record<string, unknown>): Promise<Reply>;
  /** Like `call`, but throws unless the reply is a success. */
  ok(op: Operation, path: string, token: string | undefined, data?: Record<string, unknown>): Promise<Reply>;
  /** Creates a token with `auth/token/create` as `parent` and returns its `auth` block. */
  token(parent: string, data?: Record<string, unknown>): Promise<any>; // eslint-disable-line @typescript-eslint/no-explicit-any
  policy(name: string, text: string): Promise<void>;
  /** Whether the token is accepted (lookup-self answers 200 rather than 403). */
  works(token: string): Promise<boolean>;
  /** Whether the token's entry is still in storage. */
  stored(token: string): Promise<boolean>;
  /** Closes the Core, runs `meanwhile`, and unseals a new Core over the same storage and clock. */
  restart(meanwhile?: () => Promise<void>): Promise<void>;
}

export interface RigOptions {
  storage?: Storage;
  clock?: FakeClock;
  engines?: EngineFactory[];
}

export function newCore(options: RigOptions = {}): Core {
  return new Core({
    storage: options.storage ?? new MemoryStorage(), clock: options.clock ?? new FakeClock(START), logger: silentLogger,
    engines: options.engines ?? [],
  });
}

export async function callCore(core: Core, operation: Operation, path: string, token: string | undefined, data: Record<string, unknown> = {}): Promise<Reply> {
  try {
    return await core.handle({ operation, path, data, ...(token !== undefined ? { token } : {}) });
  } catch (err) {
    if (err instanceof StrongroomError) return { status: err.status, body: { errors: err.message === '' ? [] : [err.message] } };
    throw err;
  }
}

export async function rig(options: RigOptions = {}): Promise<Rig> {
  const storage = options.storage ?? new MemoryStorage();
  const clock = options.clock ?? new FakeClock(START);
  let core = newCore({ ...options, storage, clock });
  const { keys, rootToken } = await core.initialize(1, 1);
  const key = keys[0] as Buffer;
  await core.unseal(key);
  const call: Rig['call'] = (operation, path, token, data = {}) => callCore(core, operation, path, token, data);
  const ok: Rig['ok'] = async (op, path, token, data) => {
    const reply = await call(op, path, token, data);
    if (reply.status >= 300) throw new Error(`${op} ${path} answered ${reply.status}: ${JSON.stringify(reply.body)}`);
    return reply;
  };
  return {
    get core() {
      return core;
    },
    clock, storage, root: rootToken, key, call, ok,
    async token(parent, data = {}) {
      return (await ok('update', 'auth/token/create', parent, data)).body.auth;
    },
    async policy(name, text) {
      await ok('update', `sys/policies/acl/${name}`, rootToken, { policy: text });
    },
    async works(token) {
      const reply = await call('read', 'auth/token/lookup-self', token);
      if (reply.status === 200) return true;
      if (reply.status === 403) return false;
      throw new Error(`lookup-self answered ${reply.status}: ${JSON.stringify(reply.body)}`);
    },
    async stored(token) {
      return (await core.barrier.list('sys/token/id/')).includes(core.tokens.hash(token));
    },
    async restart(meanwhile) {
      await core.close();
      if (meanwhile) await meanwhile();
      core = newCore({ ...options, storage, clock });
      await core.unseal(key);
    },
  };
}
