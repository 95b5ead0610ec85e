import { randomUUID } from 'node:crypto';
import type { Core, CoreReply } from './core';
import { BadRequestError } from './errors';
import type { TokenEntry } from './token/token-entry';

/** The policy wrapping tokens carry; it grants nothing, the token is only good for unwrapping. */
export const WRAPPING_POLICY = 'response-wrapping';

interface WrappedRecord {
  response: CoreReply;
  creation_path: string;
  creation_time: number;
  creation_ttl: number;
  wrapped_accessor?: string;
}

const INVALID = 'wrapping token is not valid or does not exist';

/**
 * Response wrapping: a reply is stored in the storage of a new single-use token (deleted with
 * it, so expiry destroys it too), and the caller gets only that token. Unwrapping spends the
 * token under the token store's lock, so a wrapped reply is handed out once.
 */
export class ResponseWrapper {
  /** `maxTtl`: seconds; a longer wrap TTL is cut to it, as token TTLs are cut to the system's maximum. */
  constructor(private readonly core: Core, private readonly maxTtl: number) {}

  async wrap(response: CoreReply, creationPath: string, requestedTtl: number, wrappedAccessor?: string): Promise<CoreReply> {
    if (!Number.isFinite(requestedTtl) || requestedTtl <= 0) throw new BadRequestError('invalid wrap TTL: expected a positive number of seconds');
    // A wrapped reply must not outlive what any token may: an unbounded one is a secret kept forever.
    const ttl = Math.max(1, Math.min(Math.floor(requestedTtl), this.maxTtl));
    const now = this.core.clock.now();
    const { id, entry } = await this.core.tokens.create({
      policies: [WRAPPING_POLICY], path: creationPath, meta: {}, displayName: '', numUses: 1, creationTime: now,
      creationTtl: ttl, expireTime: now + ttl * 1000, explicitMaxTtl: ttl, period: 0, renewable: false, type: 'service',
      boundCidrs: [], entityId: '', namespace: 'root',
    });
    const record: WrappedRecord = {
      response, creation_path: creationPath, creation_time: now, creation_ttl: ttl,
      ...(wrappedAccessor ? { wrapped_accessor: wrappedAccessor } : {}),
    };
    await this.core.tokens.putTokenData(entry.hash, Buffer.from(JSON.stringify(record)));
    return {
      status: 200,
      body: {
        request_id: randomUUID(), lease_id: '', renewable: false, lease_duration: 0, data: null,
        wrap_info: {
          token: id, accessor: entry.accessor, ttl, creation_time: new Date(now).toISOString(), creation_path: creationPath,
          ...(wrappedAccessor ? { wrapped_accessor: wrappedAccessor } : {}),
        },
        warnings: null, auth: null,
      },
    };
  }

  private async find(id: string): Promise<{ entry: TokenEntry; record: WrappedRecord }> {
    const entry = id ? await this.core.tokens.lookup(id) : null;
    if (!entry || entry.policies.length !== 1 || entry.policies[0] !== WRAPPING_POLICY) throw new BadRequestError(INVALID);
    const raw = await this.core.tokens.readTokenData(entry.hash);
    if (!raw) throw new BadRequestError(INVALID);
    return { entry, record: JSON.parse(raw.toString('utf8')) as WrappedRecord };
  }

  /** Spends the wrapping token; only the caller that spends it gets the record. */
  private async take(id: string): Promise<WrappedRecord> {
    const { entry, record } = await this.find(id);
    try {
      await this.core.tokens.use(entry);
    } catch {
      throw new BadRequestError(INVALID);
    }
    return record;
  }

  async unwrap(id: string): Promise<CoreReply> {
    return (await this.take(id)).response;
  }

  async lookup(id: string): Promise<Record<string, unknown>> {
    const { record } = await this.find(id);
    return {
      creation_path: record.creation_path,
      creation_time: new Date(record.creation_time).toISOString(),
      creation_ttl: record.creation_ttl,
    };
  }

  /** Moves a wrapped reply to a new token with the same TTL, spending the old one. */
  async rewrap(id: string): Promise<CoreReply> {
    const record = await this.take(id);
    return this.wrap(record.response, record.creation_path, record.creation_ttl, record.wrapped_accessor);
  }
}
