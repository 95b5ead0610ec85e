import { randomBytes, randomUUID } from 'node:crypto';
import { systemClock, type Clock } from '../clock';
import { BadRequestError, ConflictError } from '../errors';
import { normalizePolicyName } from '../policy/policy';
import { getJson, jsonOp, type LogicalStorage } from '../storage/logical';
import type { TxnOp } from '../storage/storage';
import { KeyedMutex } from '../keyed-mutex';

/**
 * Storage layout, relative to the store's view:
 *
 *   entity/<id>                    EntityRecord (aliases by reference only)
 *   entity-name/<name>             { id }
 *   alias/<accessor>/<alias name>  EntityAlias, in full
 *   alias-id/<alias id>            { mount_accessor, name }
 *
 * The full alias sits under its (accessor, name) key because that is how logins find it: the
 * hot path is one read. Entities hold references rather than copies, so a login that changes an
 * alias's metadata rewrites that one key and leaves the entity alone. Every segment is
 * URI-encoded: alias names come from outside (usernames, ARNs, certificate subjects) and may hold
 * '/'. Each multi-key change is a single txn, so no reader ever sees half an entity.
 */
const ENTITY = 'entity/';
const ENTITY_NAME = 'entity-name/';
const ALIAS = 'alias/';
const ALIAS_ID = 'alias-id/';

/** How many times an operation re-plans after losing a race before giving up with a 400. */
const ATTEMPTS = 8;
/** Reads in flight at once when listing, so a large store does not open thousands at a time. */
const READ_BATCH = 32;

export interface EntityAlias {
  id: string;
  name: string;
  mount_accessor: string;
  mount_type: string;
  mount_path: string;
  /** The owning entity's ID. */
  canonical_id: string;
  metadata: Record<string, string>;
  creation_time: string;
  last_update_time: string;
  local: boolean;
}

export interface Entity {
  id: string;
  name: string;
  metadata: Record<string, string>;
  /** Identity policies: granted to every token of the entity on top of the token's own. */
  policies: string[];
  disabled: boolean;
  creation_time: string;
  last_update_time: string;
  aliases: EntityAlias[];
  merged_entity_ids?: string[];
}

export interface LoginAliasInput {
  mountAccessor: string;
  mountType: string;
  /** The mount's API path, e.g. `auth/userpass/`. */
  mountPath: string;
  /** The caller's identifier within the auth method (username, role ID, ARN...). */
  aliasName: string;
  /** Replaces the alias's metadata; a login that changes nothing writes nothing. */
  metadata?: Record<string, string>;
}

export interface LoginAliasResult {
  entityId: string;
  aliasId: string;
  entity: Entity;
  alias: EntityAlias;
  /** Whether this login made the entity (a first login, or a repair of an orphaned alias). */
  created: boolean;
}

/** A create or update through the API. Absent fields keep their value (or default on create). */
export interface EntityUpsert {
  id?: string;
  name?: string;
  metadata?: Record<string, string>;
  policies?: string[];
  disabled?: boolean;
}

/**
 * Where an accessor's mount lives now. Stored aliases keep the type and path of their last
 * login; a resolver lets reads show a remounted method's current path, as Vault does.
 */
export type MountResolver = (accessor: string) => { type: string; path: string } | undefined;

export interface IdentityStoreOptions {
  clock?: Clock;
  mounts?: MountResolver;
}

interface AliasRef {
  id: string;
  mount_accessor: string;
  name: string;
}

interface EntityRecord extends Omit<Entity, 'aliases'> {
  aliases: AliasRef[];
}

interface AliasPointer {
  mount_accessor: string;
  name: string;
}

interface NamePointer {
  id: string;
}

const seg = (s: string) => encodeURIComponent(s);
const entityKey = (id: string) => ENTITY + seg(id);
const nameKey = (name: string) => ENTITY_NAME + seg(name);
const aliasKey = (accessor: string, name: string) => `${ALIAS}${seg(accessor)}/${seg(name)}`;
const aliasIdKey = (id: string) => ALIAS_ID + seg(id);

/** Thrown inside a locked section whose plan went stale before it got the locks. */
const RETRY = Symbol('identity-store-retry');

function newEntityName(): string {
  return `entity_${randomBytes(4).toString('hex')}`;
}

function requireText(label: string, value: string): string {
  if (typeof value !== 'string' || value === '') throw new BadRequestError(`missing ${label}`);
  return value;
}

function checkStringMap(label: string, map: Record<string, unknown>): Record<string, string> {
  if (map === null || typeof map !== 'object' || Array.isArray(map)) throw new BadRequestError(`invalid ${label}: expected an object of string values`);
  for (const [k, v] of Object.entries(map)) {
    if (typeof v !== 'string') throw new BadRequestError(`invalid ${label}: the value of "${k}" is not a string`);
  }
  return Object.fromEntries(Object.entries(map)) as Record<string, string>;
}

function sameMap(a: Record<string, string>, b: Record<string, string>): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && b[k] === a[k]);
}

export function normalizeEntityPolicies(policies: readonly string[]): string[] {
  return [...new Set(policies.map(normalizePolicyName).filter((p) => p !== ''))].sort();
}

function decodeLeaves(children: string[]): string[] {
  return children.filter((c) => !c.endsWith('/')).map((c) => decodeURIComponent(c));
}

async function mapBatched<T, R>(items: readonly T[], fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += READ_BATCH) out.push(...(await Promise.all(items.slice(i, i + READ_BATCH).map(fn))));
  return out;
}

/**
 * Entities and their aliases. Auth methods call `loginAlias` on every successful login; the
 * `identity/` backend (see paths.ts) serves the rest. Nothing is cached: every node reads the
 * replicated storage, so a standby never answers from a stale copy.
 */
export class IdentityStore {
  private readonly clock: Clock;
  private readonly mounts: MountResolver | undefined;
  private readonly locks = new KeyedMutex();

  constructor(private readonly storage: LogicalStorage, options: IdentityStoreOptions = {}) {
    this.clock = options.clock ?? systemClock;
    this.mounts = options.mounts;
  }

  private now(): string {
    return new Date(this.clock.now()).toISOString();
  }

  /**
   * The entity behind a login, made on the first one. A returning login whose alias already
   * carries these metadata and mount details costs two reads and no write; a changed value
   * costs one write of the alias alone. Logins of one alias are serialized, so two first logins
   * at once make one entity.
   */
  async loginAlias(input: LoginAliasInput): Promise<LoginAliasResult> {
    const accessor = requireText('mount accessor for the alias', input.mountAccessor);
    const name = requireText('alias name', input.aliasName);
    const metadata = checkStringMap('alias metadata', input.metadata ?? {});
    const key = aliasKey(accessor, name);
    const current = (alias: EntityAlias) =>
      sameMap(alias.metadata, metadata) && alias.mount_type === input.mountType && alias.mount_path === input.mountPath;

    // Unlocked first look: a returning login with nothing to change never waits on the lock.
    const seen = await getJson<EntityAlias>(this.storage, key);
    if (seen && current(seen)) {
      const record = await this.readRecord(seen.canonical_id);
      if (record) return this.loginResult(record, seen, false);
    }

    return this.retrying(async () => {
      // Named before locking so that the name's lock is taken in order with the alias's.
      const generated = newEntityName();
      return this.locks.run([key, nameKey(generated)], async () => {
        const alias = await getJson<EntityAlias>(this.storage, key);
        const record = alias ? await this.readRecord(alias.canonical_id) : null;
        const now = this.now();
        if (alias && record) {
          if (current(alias)) return this.loginResult(record, alias, false);
          const updated: EntityAlias = { ...alias, metadata, mount_type: input.mountType, mount_path: input.mountPath, last_update_time: now };
          await this.storage.txn([jsonOp(key, updated)]);
          return this.loginResult(record, updated, false);
        }
        if (await this.nameTaken(generated)) throw RETRY;
        // An alias whose entity is gone keeps its ID and gets a new entity.
        const entityId = randomUUID();
        const made: EntityAlias = {
          id: alias?.id ?? randomUUID(), name, mount_accessor: accessor, mount_type: input.mountType, mount_path: input.mountPath,
          canonical_id: entityId, metadata, creation_time: alias?.creation_time ?? now, last_update_time: now, local: false,
        };
        const entity: EntityRecord = {
          id: entityId, name: generated, metadata: {}, policies: [], disabled: false, creation_time: now, last_update_time: now,
          aliases: [{ id: made.id, mount_accessor: accessor, name }],
        };
        await this.storage.txn([
          jsonOp(entityKey(entityId), entity),
          jsonOp(nameKey(generated), { id: entityId } satisfies NamePointer),
          jsonOp(key, made),
          jsonOp(aliasIdKey(made.id), { mount_accessor: accessor, name } satisfies AliasPointer),
        ]);
        return this.loginResult(entity, made, true);
      });
    });
  }

  private async loginResult(record: EntityRecord, alias: EntityAlias, created: boolean): Promise<LoginAliasResult> {
    const entity = await this.hydrate(record, alias);
    return { entityId: record.id, aliasId: alias.id, entity, alias: this.resolved(alias), created };
  }

  // ---- entities -------------------------------------------------------------------------

  async get(entityId: string): Promise<Entity | null> {
    if (entityId === '') return null;
    const record = await this.readRecord(entityId);
    return record ? this.hydrate(record) : null;
  }

  lookupById(entityId: string): Promise<Entity | null> {
    return this.get(entityId);
  }

  async lookupByName(name: string): Promise<Entity | null> {
    if (name === '') return null;
    const pointer = await getJson<NamePointer>(this.storage, nameKey(name));
    const entity = pointer ? await this.get(pointer.id) : null;
    return entity && entity.name === name ? entity : null;
  }

  /** The entity owning the alias (mount accessor, alias name): one read to find the alias. */
  async lookupByAlias(aliasName: string, mountAccessor: string): Promise<Entity | null> {
    const alias = await this.findAlias(mountAccessor, aliasName);
    return alias ? this.get(alias.canonical_id) : null;
  }

  async lookupByAliasId(aliasId: string): Promise<Entity | null> {
    const alias = await this.getAlias(aliasId);
    return alias ? this.get(alias.canonical_id) : null;
  }

  async listIds(): Promise<string[]> {
    return decodeLeaves(await this.storage.list(ENTITY)).sort();
  }

  /** Every entity with its aliases, by ID. Reads the whole store: meant for admin listings. */
  async list(): Promise<Entity[]> {
    const entities = await mapBatched(await this.listIds(), (id) => this.get(id));
    return entities.filter((e): e is Entity => e !== null);
  }

  async listNames(): Promise<string[]> {
    return decodeLeaves(await this.storage.list(ENTITY_NAME)).sort();
  }

  /**
   * Creates an entity, or updates one named by `id` (which must exist) or by `name`. Renaming
   * to a name another entity holds is refused.
   */
  async upsertEntity(input: EntityUpsert): Promise<{ entity: Entity; created: boolean }> {
    if (input.name !== undefined) requireText('entity name', input.name);
    const metadata = input.metadata && checkStringMap('entity metadata', input.metadata);
    const policies = input.policies && normalizeEntityPolicies(input.policies);
    return this.retrying(async () => {
      const target = input.id ?? (input.name !== undefined ? (await getJson<NamePointer>(this.storage, nameKey(input.name)))?.id : undefined);
      const seen = target !== undefined ? await this.readRecord(target) : null;
      if (input.id !== undefined && !seen) throw new BadRequestError(`no entity has ID "${input.id}"`);
      if (seen) return { entity: await this.updateEntity(seen, { ...input, metadata, policies }), created: false };
      return { entity: await this.createEntity({ ...input, metadata, policies }), created: true };
    });
  }

  private async updateEntity(seen: EntityRecord, change: EntityUpsert): Promise<Entity> {
    const newName = change.name ?? seen.name;
    return this.locks.run([entityKey(seen.id), nameKey(seen.name), nameKey(newName)], async () => {
      const record = await this.readRecord(seen.id);
      if (!record || record.name !== seen.name) throw RETRY;
      const ops: TxnOp[] = [];
      if (newName !== record.name) {
        const holder = await getJson<NamePointer>(this.storage, nameKey(newName));
        if (holder && holder.id !== record.id && (await this.readRecord(holder.id))) {
          throw new BadRequestError(`invalid value for "name": entity name "${newName}" is already in use`);
        }
        ops.push({ type: 'delete', key: nameKey(record.name) }, jsonOp(nameKey(newName), { id: record.id } satisfies NamePointer));
      }
      const next: EntityRecord = {
        ...record,
        name: newName,
        metadata: change.metadata ?? record.metadata,
        policies: change.policies ?? record.policies,
        disabled: change.disabled ?? record.disabled,
        last_update_time: this.now(),
      };
      await this.storage.txn([jsonOp(entityKey(record.id), next), ...ops]);
      return this.hydrate(next);
    });
  }

  private async createEntity(input: EntityUpsert): Promise<Entity> {
    const name = input.name ?? newEntityName();
    return this.locks.run([nameKey(name)], async () => {
      // Someone took the name since we looked: start over, and update theirs if it was asked by name.
      if (await this.nameTaken(name)) throw RETRY;
      const now = this.now();
      const record: EntityRecord = {
        id: randomUUID(), name, metadata: input.metadata ?? {}, policies: input.policies ?? [], disabled: input.disabled ?? false,
        creation_time: now, last_update_time: now, aliases: [],
      };
      await this.storage.txn([jsonOp(entityKey(record.id), record), jsonOp(nameKey(name), { id: record.id } satisfies NamePointer)]);
      return this.hydrate(record);
    });
  }

  /** Deletes the entity, its name and all its aliases in one txn. False if there was none. */
  async delete(entityId: string): Promise<boolean> {
    if (entityId === '') return false;
    return this.retrying(async () => {
      const seen = await this.readRecord(entityId);
      if (!seen) return false;
      const lockSet = (r: EntityRecord) => [entityKey(r.id), nameKey(r.name), ...r.aliases.map((a) => aliasKey(a.mount_accessor, a.name))];
      const planned = lockSet(seen);
      return this.locks.run(planned, async () => {
        const record = await this.readRecord(entityId);
        if (!record) return false;
        // An alias added or a rename since we looked would escape the locks we hold.
        if (lockSet(record).sort().join('\n') !== [...planned].sort().join('\n')) throw RETRY;
        const ops: TxnOp[] = [{ type: 'delete', key: entityKey(record.id) }];
        const holder = await getJson<NamePointer>(this.storage, nameKey(record.name));
        if (holder?.id === record.id) ops.push({ type: 'delete', key: nameKey(record.name) });
        for (const ref of record.aliases) {
          const alias = await getJson<EntityAlias>(this.storage, aliasKey(ref.mount_accessor, ref.name));
          if (alias?.canonical_id !== record.id) continue;
          ops.push({ type: 'delete', key: aliasKey(ref.mount_accessor, ref.name) }, { type: 'delete', key: aliasIdKey(alias.id) });
        }
        await this.storage.txn(ops);
        return true;
      });
    });
  }

  // ---- aliases --------------------------------------------------------------------------

  /** The alias (mount accessor, alias name): a single storage read. */
  async findAlias(mountAccessor: string, aliasName: string): Promise<EntityAlias | null> {
    if (mountAccessor === '' || aliasName === '') return null;
    const alias = await getJson<EntityAlias>(this.storage, aliasKey(mountAccessor, aliasName));
    return alias ? this.resolved(alias) : null;
  }

  async getAlias(aliasId: string): Promise<EntityAlias | null> {
    if (aliasId === '') return null;
    const pointer = await getJson<AliasPointer>(this.storage, aliasIdKey(aliasId));
    if (!pointer) return null;
    const alias = await getJson<EntityAlias>(this.storage, aliasKey(pointer.mount_accessor, pointer.name));
    return alias && alias.id === aliasId ? this.resolved(alias) : null;
  }

  async listAliasIds(): Promise<string[]> {
    return decodeLeaves(await this.storage.list(ALIAS_ID)).sort();
  }

  async listAliases(): Promise<EntityAlias[]> {
    const aliases = await mapBatched(await this.listAliasIds(), (id) => this.getAlias(id));
    return aliases.filter((a): a is EntityAlias => a !== null);
  }

  /** Removes one alias and its reference from its entity; the entity stays, as in Vault. */
  async deleteAlias(aliasId: string): Promise<boolean> {
    if (aliasId === '') return false;
    const pointer = await getJson<AliasPointer>(this.storage, aliasIdKey(aliasId));
    return pointer ? this.removeAlias(pointer.mount_accessor, pointer.name, aliasId) : false;
  }

  /**
   * Removes every alias of an auth mount, for when the mount is disabled: its accessor will never
   * be seen again. Entities stay, possibly with no alias left. Answers how many were removed.
   */
  async deleteAliasesForMount(mountAccessor: string): Promise<number> {
    if (mountAccessor === '') return 0;
    let removed = 0;
    for (const name of decodeLeaves(await this.storage.list(`${ALIAS}${seg(mountAccessor)}/`))) {
      if (await this.removeAlias(mountAccessor, name)) removed++;
    }
    return removed;
  }

  private removeAlias(accessor: string, name: string, expectedId?: string): Promise<boolean> {
    const key = aliasKey(accessor, name);
    return this.retrying(async () => {
      const seen = await getJson<EntityAlias>(this.storage, key);
      if (!seen || (expectedId !== undefined && seen.id !== expectedId)) return false;
      return this.locks.run([key, entityKey(seen.canonical_id)], async () => {
        const alias = await getJson<EntityAlias>(this.storage, key);
        if (!alias || alias.id !== seen.id) return false;
        if (alias.canonical_id !== seen.canonical_id) throw RETRY;
        const ops: TxnOp[] = [{ type: 'delete', key }, { type: 'delete', key: aliasIdKey(alias.id) }];
        const record = await this.readRecord(alias.canonical_id);
        if (record) {
          const next: EntityRecord = { ...record, aliases: record.aliases.filter((r) => r.id !== alias.id), last_update_time: this.now() };
          ops.push(jsonOp(entityKey(record.id), next));
        }
        await this.storage.txn(ops);
        return true;
      });
    });
  }

  // ---- internals ------------------------------------------------------------------------

  private readRecord(entityId: string): Promise<EntityRecord | null> {
    return getJson<EntityRecord>(this.storage, entityKey(entityId));
  }

  /** Whether a live entity holds `name`; a pointer left to a deleted entity does not count. */
  private async nameTaken(name: string): Promise<boolean> {
    const pointer = await getJson<NamePointer>(this.storage, nameKey(name));
    return pointer !== null && (await this.readRecord(pointer.id)) !== null;
  }

  /** The entity with its aliases read in; `known` saves the read of an alias already in hand. */
  private async hydrate(record: EntityRecord, known?: EntityAlias): Promise<Entity> {
    const aliases = await Promise.all(record.aliases.map(async (ref) => {
      const alias = known?.id === ref.id ? known : await getJson<EntityAlias>(this.storage, aliasKey(ref.mount_accessor, ref.name));
      return alias && alias.id === ref.id && alias.canonical_id === record.id ? this.resolved(alias) : null;
    }));
    const { aliases: _refs, ...rest } = record;
    return { ...rest, aliases: aliases.filter((a): a is EntityAlias => a !== null) };
  }

  private resolved(alias: EntityAlias): EntityAlias {
    const mount = this.mounts?.(alias.mount_accessor);
    return mount ? { ...alias, mount_type: mount.type, mount_path: mount.path } : { ...alias };
  }

  private async retrying<T>(attempt: () => Promise<T>): Promise<T> {
    for (let i = 0; i < ATTEMPTS; i++) {
      try {
        return await attempt();
      } catch (err) {
        if (err !== RETRY) throw err;
      }
    }
    throw new ConflictError('the identity store changed under this request too many times; retry it');
  }
}
