import { randomUUID } from 'node:crypto';
import { NotFoundError, StrongroomError } from '../errors';
import type { LogicalStorage } from '../storage/logical';
import { MemoryStorage } from '../storage/memory-storage';
import type { Backend } from './backend';
import type { BackendRequest, BackendResponse, Caller, MountSettings, Operation } from './types';

/**
 * Drives a backend the way the router does (match, resolve a write into create or update,
 * execute) over in-memory storage, with no HTTP and no ACL. For engines' unit tests.
 */
export class BackendHarness {
  readonly storage: LogicalStorage;
  readonly mount: MountSettings;
  /** The operation the last write resolved to, so tests can assert create vs update. */
  lastOperation: Operation | undefined;

  constructor(readonly backend: Backend, mount: Partial<MountSettings> = {}, storage?: LogicalStorage) {
    this.storage = storage ?? new MemoryStorage();
    this.mount = {
      path: 'test/', type: backend.type, accessor: `${backend.type}_test`, uuid: randomUUID(),
      defaultLeaseTtl: 0, maxLeaseTtl: 0, options: {}, ...mount,
    };
  }

  async request(op: Operation | 'write', path: string, data: Record<string, unknown> = {}, caller?: Caller): Promise<BackendResponse | null> {
    const match = this.backend.match(path);
    if (!match) throw new NotFoundError(`unsupported path: ${path}`);
    const req: BackendRequest = {
      id: randomUUID(), operation: op === 'write' ? 'update' : op, path, mount: this.mount,
      storage: this.storage, data, headers: {}, namespace: { id: 'root', path: '' }, ...(caller ? { caller } : {}),
    };
    if (op === 'write') req.operation = await this.backend.resolveWrite(match, req);
    this.lastOperation = req.operation;
    return this.backend.execute(match, req);
  }
}

/** Awaits a request expected to fail with `status`, returning the error for closer checks. */
export async function expectFailure(p: Promise<unknown>, status: number): Promise<StrongroomError> {
  let caught: unknown;
  try {
    await p;
  } catch (err) {
    caught = err;
  }
  if (!(caught instanceof StrongroomError)) throw new Error(`expected a StrongroomError with status ${status}, got ${String(caught)}`);
  if (caught.status !== status) throw new Error(`expected status ${status}, got ${caught.status}: ${caught.message}`);
  return caught;
}

/** Awaits a request expected to be refused with 400, checking that the message names `field`. */
export async function expectBadRequest(p: Promise<unknown>, field: string): Promise<string> {
  const err = await expectFailure(p, 400);
  if (!err.message.includes(`"${field}"`)) throw new Error(`expected the 400 to name "${field}", got: ${err.message}`);
  return err.message;
}
