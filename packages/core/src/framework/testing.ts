import { randomUUID } from 'node:crypto';
import { NotFoundError } from '../errors';
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
