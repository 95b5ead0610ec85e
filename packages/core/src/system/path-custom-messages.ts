import { randomUUID } from 'node:crypto';
import type { Core } from '../core';
import { BadRequestError, NotFoundError, PermissionDeniedError } from '../errors';
import type { FieldData, FieldSchemas } from '../framework/fields';
import { definePath, type BackendRequest, type PathDefinition } from '../framework/types';
import { KeyedMutex } from '../keyed-mutex';
import { getJson, putJson, type LogicalStorage } from '../storage/logical';

/** Per namespace, as in Vault: the UI shows every active message, so an unbounded set would swamp it. */
export const MAX_MESSAGES_PER_NAMESPACE = 100;

/** Messages of namespace <id> live under this prefix + '<id>/'. */
export const UI_MESSAGES_PREFIX = 'sys/ui-messages/';

const MESSAGE_TYPES = ['banner', 'modal'] as const;
type MessageType = (typeof MESSAGE_TYPES)[number];

interface StoredMessage {
  id: string;
  title: string;
  message: string;
  authenticated: boolean;
  type: MessageType;
  start_time: string;
  end_time: string | null;
  /** `{ "<link title>": "<url>" }`, the shape clients send and read back. */
  link: Record<string, string> | null;
  options: Record<string, unknown> | null;
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;
// Strict, padded standard alphabet: a body the UI cannot decode would show up as garbage to every user.
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

function parseTime(name: string, value: string): number {
  const ms = RFC3339.test(value) ? Date.parse(value) : NaN;
  if (Number.isNaN(ms)) throw new BadRequestError(`invalid ${name} parameter value: expected an RFC 3339 timestamp such as "2026-01-02T15:04:05Z", got "${value}"`);
  return ms;
}

function isActive(m: StoredMessage, now: number): boolean {
  if (Date.parse(m.start_time) > now) return false;
  return m.end_time === null || now < Date.parse(m.end_time);
}

function keyFor(namespaceId: string, id: string): string {
  return `${UI_MESSAGES_PREFIX}${namespaceId}/${id}`;
}

async function loadAll(storage: LogicalStorage, namespaceId: string): Promise<StoredMessage[]> {
  const ids = (await storage.list(`${UI_MESSAGES_PREFIX}${namespaceId}/`)).filter((k) => !k.endsWith('/')).sort();
  const out: StoredMessage[] = [];
  for (const id of ids) {
    const m = await getJson<StoredMessage>(storage, keyFor(namespaceId, id));
    if (m) out.push(m);
  }
  return out;
}

const MESSAGE_FIELDS: FieldSchemas = {
  title: { type: 'string' },
  message: { type: 'string' },
  authenticated: { type: 'bool' },
  type: { type: 'string' },
  start_time: { type: 'string' },
  end_time: { type: 'string' },
  link: { type: 'map' },
  options: { type: 'map' },
};

function checkType(value: string, failure: string): MessageType {
  const type = MESSAGE_TYPES.find((t) => t === value);
  if (!type) throw new BadRequestError(`${failure}: unrecognized message type "${value}": type must be "banner" or "modal"`);
  return type;
}

/**
 * The message a write describes, without its ID. `failure` prefixes the rules that concern the
 * message as a whole (type, period), as Vault's wording does for create and update.
 */
function messageFrom(f: FieldData, failure: string): Omit<StoredMessage, 'id'> {
  for (const name of ['title', 'message', 'start_time'] as const) {
    if (f.string(name) === '') throw new BadRequestError(`missing ${name} parameter value`);
  }
  const message = f.string('message');
  if (!BASE64.test(message)) throw new BadRequestError('invalid message parameter value, must be base64 encoded');
  const startTime = f.string('start_time');
  const start = parseTime('start_time', startTime);
  const endTime = f.string('end_time') === '' ? null : f.string('end_time');
  if (endTime !== null && parseTime('end_time', endTime) <= start) {
    throw new BadRequestError(`${failure}: message start time must occur before end time (start_time ${startTime}, end_time ${endTime})`);
  }
  const type = f.has('type') ? checkType(f.string('type'), failure) : 'banner';
  let link: Record<string, string> | null = null;
  const rawLink = f.map('link');
  if (rawLink) {
    const entries = Object.entries(rawLink);
    if (entries.length !== 1) throw new BadRequestError(`invalid link parameter value, only a single element can be provided (got ${entries.length})`);
    const [title, url] = entries[0] as [string, unknown];
    if (title === '') throw new BadRequestError('invalid link parameter value, missing title key: the key is the link title');
    if (typeof url !== 'string' || url === '') throw new BadRequestError(`invalid link parameter value, missing url for "${title}" key`);
    link = { [title]: url };
  }
  return {
    title: f.string('title'),
    message,
    // An unmarked message is post-login: showing it to anonymous callers must be a deliberate choice.
    authenticated: f.has('authenticated') ? f.bool('authenticated') : true,
    type,
    start_time: startTime,
    end_time: endTime,
    link,
    options: f.map('options') ?? null,
  };
}

/** What the UI readers return per message: everything it needs to render, nothing else. */
function display(m: StoredMessage) {
  return {
    title: m.title, message: m.message, type: m.type, authenticated: m.authenticated,
    start_time: m.start_time, end_time: m.end_time, link: m.link, options: m.options,
  };
}

/**
 * `sys/config/ui/custom-messages/*` (per namespace, managed with ACL grants) and the two readers
 * the UI polls, `sys/internal/ui/{unauthenticated,authenticated}-messages`.
 */
export function customMessagePaths(core: Core): PathDefinition[] {
  // A create counts then writes; without this two concurrent creates could both see 99.
  const locks = new KeyedMutex();

  // Through the registry rather than `req.namespace` so a namespace deleted mid-flight answers 404.
  const nsOf = (req: BackendRequest): string => core.viewOf(req).id;

  const readMessage = async (req: BackendRequest, id: string): Promise<StoredMessage> => {
    const m = await getJson<StoredMessage>(req.storage, keyFor(nsOf(req), id));
    if (!m) throw new NotFoundError();
    return m;
  };

  /** Active messages of the request's namespace with the given audience. */
  const activeFor = async (req: BackendRequest, authenticated: boolean) => {
    const now = core.clock.now();
    const found = (await loadAll(req.storage, nsOf(req))).filter((m) => m.authenticated === authenticated && isActive(m, now));
    const keyInfo: Record<string, unknown> = {};
    for (const m of found) keyInfo[m.id] = display(m);
    return { data: { keys: found.map((m) => m.id), key_info: keyInfo } };
  };

  return [
    definePath({
      pattern: 'config/ui/custom-messages/?',
      fields: { ...MESSAGE_FIELDS, active: { type: 'bool' } },
      operations: {
        list: async (req, f) => {
          const type = f.has('type') ? checkType(f.string('type'), 'failed to list custom messages') : null;
          const now = core.clock.now();
          const found = (await loadAll(req.storage, nsOf(req))).filter((m) =>
            (!f.has('active') || isActive(m, now) === f.bool('active'))
            && (!f.has('authenticated') || m.authenticated === f.bool('authenticated'))
            && (type === null || m.type === type));
          const keyInfo: Record<string, unknown> = {};
          for (const m of found) {
            keyInfo[m.id] = {
              title: m.title, type: m.type, authenticated: m.authenticated,
              start_time: m.start_time, end_time: m.end_time, active: isActive(m, now),
            };
          }
          return { data: { keys: found.map((m) => m.id), key_info: keyInfo } };
        },
        update: async (req, f) => {
          const failure = 'failed to create custom message';
          const fields = messageFrom(f, failure);
          const ns = nsOf(req);
          const m = await locks.run(ns, async () => {
            const existing = (await req.storage.list(`${UI_MESSAGES_PREFIX}${ns}/`)).length;
            if (existing >= MAX_MESSAGES_PER_NAMESPACE) {
              throw new BadRequestError(`${failure}: maximum number of messages already exist (${MAX_MESSAGES_PER_NAMESPACE} per namespace)`);
            }
            const created: StoredMessage = { id: randomUUID(), ...fields };
            await putJson(req.storage, keyFor(ns, created.id), created);
            return created;
          });
          const link = m.link ? Object.entries(m.link).map(([title, href]) => ({ title, href }))[0] ?? null : null;
          return { data: {
            id: m.id, authenticated: m.authenticated, type: m.type, message: m.message, start_time: m.start_time,
            end_time: m.end_time, link, options: m.options, active: isActive(m, core.clock.now()),
          } };
        },
      },
    }),
    definePath({
      pattern: 'config/ui/custom-messages/(?<id>[A-Za-z0-9-]+)',
      fields: { id: { type: 'string' }, ...MESSAGE_FIELDS },
      operations: {
        read: async (req, f) => {
          const m = await readMessage(req, f.string('id'));
          return { data: { ...m, active: isActive(m, core.clock.now()) } };
        },
        update: async (req, f) => {
          const fields = messageFrom(f, 'failed to update custom message');
          const ns = nsOf(req);
          const m = await locks.run(ns, async () => {
            const current = await readMessage(req, f.string('id'));
            const next: StoredMessage = { ...fields, id: current.id };
            await putJson(req.storage, keyFor(ns, next.id), next);
            return next;
          });
          return { data: {
            id: m.id, active: isActive(m, core.clock.now()), start_time: m.start_time, end_time: m.end_time,
            type: m.type, authenticated: m.authenticated,
          } };
        },
        delete: async (req, f) => {
          const ns = nsOf(req);
          await locks.run(ns, () => req.storage.delete(keyFor(ns, f.string('id'))));
          return null;
        },
      },
    }),
    definePath({
      pattern: 'internal/ui/unauthenticated-messages',
      // The login page asks before anyone has a token; only pre-login messages are ever served here.
      unauthenticated: true,
      operations: { read: (req) => activeFor(req, false) },
    }),
    definePath({
      pattern: 'internal/ui/authenticated-messages',
      // Any live token of this namespace (or above) may read these, without a policy grant: every
      // signed-in UI user is the audience, and the default policy of older setups lacks this path.
      unauthenticated: true,
      operations: {
        read: async (req) => {
          const entry = req.clientToken ? await core.tokens.lookup(req.clientToken) : null;
          const home = entry ? core.namespaces.byId(entry.namespace) : undefined;
          if (!home || !core.viewOf(req).path.startsWith(home.path)) throw new PermissionDeniedError();
          return activeFor(req, true);
        },
      },
    }),
  ];
}
