import { StrongroomError } from '../errors';
import type { Operation } from '../framework/types';
import { failure, rig, START, type Reply, type Rig } from '../testing/core-rig';
import { MAX_MESSAGES_PER_NAMESPACE } from './path-custom-messages';

const BASE = 'sys/config/ui/custom-messages';
const HOUR = 3600_000;
const at = (ms: number) => new Date(ms).toISOString();
const body = (text: string) => Buffer.from(text).toString('base64');

function msg(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { title: 'Maintenance', message: body('down at noon'), start_time: at(START - HOUR), ...overrides };
}

/** A request in namespace `ns` (through the X-Vault-Namespace header). */
async function inNs(r: Rig, ns: string, op: Operation, path: string, token: string | undefined, data: Record<string, unknown> = {}): Promise<Reply> {
  try {
    return await r.core.handle({ operation: op, path, data, headers: { 'x-vault-namespace': ns }, ...(token ? { token } : {}) });
  } catch (err) {
    if (err instanceof StrongroomError) return { status: err.status, body: { errors: err.message === '' ? [] : [err.message] } };
    throw err;
  }
}

async function create(r: Rig, data: Record<string, unknown>): Promise<string> {
  return (await r.ok('update', BASE, r.root, data)).body.data.id;
}

describe('custom messages: CRUD', () => {
  it('creates with a server-assigned id, reads, updates and deletes', async () => {
    const r = await rig();
    const created = (await r.ok('update', BASE, r.root, msg({
      type: 'modal', authenticated: false, end_time: at(START + HOUR), link: { Docs: 'https://example.test/docs' }, options: { color: 'red' },
    }))).body.data;
    expect(created).toEqual({
      id: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/),
      authenticated: false, type: 'modal', message: body('down at noon'), start_time: at(START - HOUR), end_time: at(START + HOUR),
      link: { title: 'Docs', href: 'https://example.test/docs' }, options: { color: 'red' }, active: true,
    });
    const id: string = created.id;
    expect((await r.ok('read', `${BASE}/${id}`, r.root)).body.data).toEqual({
      id, title: 'Maintenance', authenticated: false, type: 'modal', message: body('down at noon'),
      start_time: at(START - HOUR), end_time: at(START + HOUR), link: { Docs: 'https://example.test/docs' }, options: { color: 'red' }, active: true,
    });

    const updated = (await r.ok('update', `${BASE}/${id}`, r.root, msg({ title: 'Later', start_time: at(START + HOUR) }))).body.data;
    expect(updated).toEqual({ id, active: false, start_time: at(START + HOUR), end_time: null, type: 'banner', authenticated: true });
    const read = (await r.ok('read', `${BASE}/${id}`, r.root)).body.data;
    expect(read).toMatchObject({ title: 'Later', link: null, options: null, end_time: null });

    await r.ok('delete', `${BASE}/${id}`, r.root);
    expect((await r.call('read', `${BASE}/${id}`, r.root)).status).toBe(404);
    expect((await r.call('update', `${BASE}/${id}`, r.root, msg())).status).toBe(404);
    expect((await r.call('list', `${BASE}/`, r.root)).status).toBe(404);
  });

  it('defaults to a post-login banner and requires title, message and start_time on update', async () => {
    const r = await rig();
    const id = await create(r, msg());
    expect((await r.ok('read', `${BASE}/${id}`, r.root)).body.data).toMatchObject({ type: 'banner', authenticated: true });
    expect(await failure(r.call('update', `${BASE}/${id}`, r.root, { title: 'only a title' }))).toEqual({ status: 400, message: 'missing message parameter value' });
  });

  it('needs a token with a grant to manage messages', async () => {
    const r = await rig();
    const plain = (await r.token(r.root, { policies: ['default'] })).client_token;
    expect((await r.call('update', BASE, plain, msg())).status).toBe(403);
    expect((await r.call('list', `${BASE}/`, undefined)).status).toBe(403);
  });
});

describe('custom messages: list filters', () => {
  it('answers every combination of active, authenticated and type', async () => {
    const r = await rig();
    const all: { id: string; active: boolean; authenticated: boolean; type: string; window: Record<string, string> }[] = [];
    for (const active of [true, false]) {
      for (const authenticated of [true, false]) {
        for (const type of ['banner', 'modal']) {
          // Inactive ones are either not yet started or already over, so both ends of the period count.
          const window: Record<string, string> = active ? { start_time: at(START - HOUR) } : all.length % 2
            ? { start_time: at(START + HOUR) } : { start_time: at(START - 2 * HOUR), end_time: at(START - HOUR) };
          const id = await create(r, msg({ ...window, authenticated, type, title: `${active}-${authenticated}-${type}` }));
          all.push({ id, active, authenticated, type, window });
        }
      }
    }
    for (const active of [undefined, true, false]) {
      for (const authenticated of [undefined, true, false]) {
        for (const type of [undefined, 'banner', 'modal']) {
          const query: Record<string, unknown> = {};
          if (active !== undefined) query['active'] = String(active);
          if (authenticated !== undefined) query['authenticated'] = String(authenticated);
          if (type !== undefined) query['type'] = type;
          const expected = all.filter((m) => (active === undefined || m.active === active)
            && (authenticated === undefined || m.authenticated === authenticated) && (type === undefined || m.type === type));
          const reply = await r.call('list', `${BASE}/`, r.root, query);
          expect(reply.status).toBe(200);
          expect([...reply.body.data.keys].sort()).toEqual(expected.map((m) => m.id).sort());
          for (const m of expected) {
            expect(reply.body.data.key_info[m.id]).toEqual({
              title: `${m.active}-${m.authenticated}-${m.type}`, type: m.type, authenticated: m.authenticated,
              start_time: m.window['start_time'], end_time: m.window['end_time'] ?? null, active: m.active,
            });
          }
        }
      }
    }
  });

  it('answers 404 when nothing matches and 400 for a bad filter', async () => {
    const r = await rig();
    await create(r, msg({ type: 'banner' }));
    expect((await r.call('list', `${BASE}/`, r.root, { type: 'modal' })).status).toBe(404);
    expect(await failure(r.call('list', `${BASE}/`, r.root, { type: 'popup' }))).toMatchObject({ status: 400, message: expect.stringMatching(/type/) });
    expect(await failure(r.call('list', `${BASE}/`, r.root, { active: 'maybe' }))).toMatchObject({ status: 400, message: expect.stringMatching(/"active"/) });
  });
});

describe('custom messages: per-namespace limit', () => {
  it(`refuses message ${MAX_MESSAGES_PER_NAMESPACE + 1} of a namespace, even when created concurrently`, async () => {
    const r = await rig();
    await r.ok('update', 'sys/namespaces/team', r.root);
    const replies = await Promise.all(Array.from({ length: MAX_MESSAGES_PER_NAMESPACE + 5 }, () => r.call('update', BASE, r.root, msg())));
    expect(replies.filter((x) => x.status === 200)).toHaveLength(MAX_MESSAGES_PER_NAMESPACE);
    const refused = replies.filter((x) => x.status !== 200);
    expect(refused).toHaveLength(5);
    for (const x of refused) {
      expect(x).toEqual({ status: 400, body: { errors: ['failed to create custom message: maximum number of messages already exist (100 per namespace)'] } });
    }
    expect((await r.ok('list', `${BASE}/`, r.root)).body.data.keys).toHaveLength(MAX_MESSAGES_PER_NAMESPACE);

    // Another namespace has its own allowance and its own list.
    expect((await inNs(r, 'team', 'update', BASE, r.root, msg())).status).toBe(200);
    expect((await inNs(r, 'team', 'list', `${BASE}/`, r.root)).body.data.keys).toHaveLength(1);

    // Deleting frees a slot.
    const first = (await r.ok('list', `${BASE}/`, r.root)).body.data.keys[0];
    await r.ok('delete', `${BASE}/${first}`, r.root);
    expect((await r.call('update', BASE, r.root, msg())).status).toBe(200);
    expect((await r.call('update', BASE, r.root, msg())).status).toBe(400);
  });
});

describe('custom messages: validation', () => {
  const cases: [string, Record<string, unknown>, RegExp][] = [
    ['missing title', msg({ title: undefined }), /^missing title parameter value$/],
    ['empty title', msg({ title: '' }), /^missing title parameter value$/],
    ['missing message', msg({ message: undefined }), /^missing message parameter value$/],
    ['missing start_time', msg({ start_time: undefined }), /^missing start_time parameter value$/],
    ['message not base64', msg({ message: 'not base64!' }), /^invalid message parameter value, must be base64 encoded$/],
    ['message without padding', msg({ message: 'YWJj=' }), /message parameter value, must be base64/],
    ['start_time not RFC 3339', msg({ start_time: '2026-01-01 10:00:00' }), /^invalid start_time parameter value/],
    ['start_time impossible', msg({ start_time: '2026-13-01T00:00:00Z' }), /^invalid start_time parameter value/],
    ['end_time not RFC 3339', msg({ end_time: 'tomorrow' }), /^invalid end_time parameter value/],
    ['end before start', msg({ start_time: at(START), end_time: at(START - 1000) }), /^failed to create custom message: message start time must occur before end time/],
    ['end equal to start', msg({ start_time: at(START), end_time: at(START) }), /message start time must occur before end time/],
    ['unknown type', msg({ type: 'popup' }), /^failed to create custom message: unrecognized message type "popup": type must be "banner" or "modal"$/],
    ['link with two entries', msg({ link: { a: 'https://a.test', b: 'https://b.test' } }), /^invalid link parameter value, only a single element can be provided/],
    ['empty link', msg({ link: {} }), /^invalid link parameter value, only a single element can be provided/],
    ['link without url', msg({ link: { Docs: '' } }), /^invalid link parameter value, missing url for "Docs" key$/],
    ['link with a non-string url', msg({ link: { Docs: 5 } }), /missing url for "Docs" key/],
    ['link with an empty title', msg({ link: { '': 'https://a.test' } }), /^invalid link parameter value, missing title key/],
    ['link not an object', msg({ link: 'https://a.test' }), /"link"/],
    ['options not an object', msg({ options: 'red' }), /"options"/],
    ['options a list', msg({ options: ['red'] }), /"options"/],
    ['authenticated not a bool', msg({ authenticated: 'sometimes' }), /"authenticated"/],
  ];

  it.each(cases)('refuses %s with a 400 naming the field', async (_name, data, message) => {
    const r = await rig();
    const clean = Object.fromEntries(Object.entries(data).filter(([, v]) => v !== undefined));
    const result = await failure(r.call('update', BASE, r.root, clean));
    expect(result.status).toBe(400);
    expect(result.message).toMatch(message);
    expect((await r.call('list', `${BASE}/`, r.root)).status).toBe(404);
  });

  it('applies the same rules to updates, leaving the stored message as it was', async () => {
    const r = await rig();
    const id = await create(r, msg());
    expect(await failure(r.call('update', `${BASE}/${id}`, r.root, msg({ type: 'toast' }))))
      .toEqual({ status: 400, message: 'failed to update custom message: unrecognized message type "toast": type must be "banner" or "modal"' });
    expect((await failure(r.call('update', `${BASE}/${id}`, r.root, msg({ end_time: at(START - 2 * HOUR) })))).message)
      .toMatch(/^failed to update custom message: message start time must occur before end time/);
    expect((await r.ok('read', `${BASE}/${id}`, r.root)).body.data).toMatchObject({ title: 'Maintenance', type: 'banner', end_time: null });
  });

  it('accepts RFC 3339 times with offsets and fractions', async () => {
    const r = await rig();
    const id = await create(r, msg({ start_time: '2025-12-31T23:00:00.5+01:00', end_time: '2026-01-01T02:00:00-02:00' }));
    expect((await r.ok('read', `${BASE}/${id}`, r.root)).body.data).toMatchObject({ active: true });
  });
});

describe('custom messages: time windows', () => {
  it('is active from start_time until end_time as the clock moves', async () => {
    const r = await rig();
    const bounded = await create(r, msg({ start_time: at(START + HOUR), end_time: at(START + 2 * HOUR) }));
    const open = await create(r, msg({ start_time: at(START + HOUR) }));
    const active = async (id: string) => (await r.ok('read', `${BASE}/${id}`, r.root)).body.data.active;
    const activeKeys = async () => {
      const reply = await r.call('list', `${BASE}/`, r.root, { active: 'true' });
      return reply.status === 404 ? [] : [...reply.body.data.keys].sort();
    };

    expect([await active(bounded), await active(open)]).toEqual([false, false]);
    expect(await activeKeys()).toEqual([]);
    await r.clock.advance(HOUR - 1);
    expect(await active(bounded)).toBe(false);
    await r.clock.advance(1);
    expect([await active(bounded), await active(open)]).toEqual([true, true]);
    expect(await activeKeys()).toEqual([bounded, open].sort());
    await r.clock.advance(HOUR - 1);
    expect(await active(bounded)).toBe(true);
    await r.clock.advance(1);
    expect([await active(bounded), await active(open)]).toEqual([false, true]);
    expect(await activeKeys()).toEqual([open]);
    // Each fake minute runs core's periodic work, so a day stands in for "much later".
    await r.clock.advance(24 * HOUR);
    expect(await active(open)).toBe(true);
    expect(await active(await create(r, msg({ start_time: '2000-01-01T00:00:00Z' })))).toBe(true);
  });

  it('reports the computed active flag on create', async () => {
    const r = await rig();
    expect((await r.ok('update', BASE, r.root, msg({ start_time: at(START + 1) }))).body.data.active).toBe(false);
    expect((await r.ok('update', BASE, r.root, msg({ start_time: at(START) }))).body.data.active).toBe(true);
  });
});

describe('custom messages: UI readers', () => {
  async function seeded() {
    const r = await rig();
    const ids = {
      pre: await create(r, msg({ title: 'pre', authenticated: false, link: { Status: 'https://status.test' } })),
      preLater: await create(r, msg({ title: 'pre-later', authenticated: false, start_time: at(START + HOUR) })),
      post: await create(r, msg({ title: 'post', authenticated: true, type: 'modal' })),
      postOver: await create(r, msg({ title: 'post-over', authenticated: true, start_time: at(START - 2 * HOUR), end_time: at(START - HOUR) })),
    };
    return { r, ids };
  }

  it('shows anonymous callers only the active pre-login messages', async () => {
    const { r, ids } = await seeded();
    const reply = await r.ok('read', 'sys/internal/ui/unauthenticated-messages', undefined);
    expect(reply.body.data).toEqual({
      keys: [ids.pre],
      key_info: { [ids.pre]: {
        title: 'pre', message: body('down at noon'), type: 'banner', authenticated: false,
        start_time: at(START - HOUR), end_time: null, link: { Status: 'https://status.test' }, options: null,
      } },
    });
    // A token makes no difference to the pre-login reader: it never carries post-login messages.
    expect((await r.ok('read', 'sys/internal/ui/unauthenticated-messages', r.root)).body.data.keys).toEqual([ids.pre]);
    await r.clock.advance(HOUR);
    expect([...(await r.ok('read', 'sys/internal/ui/unauthenticated-messages', undefined)).body.data.keys].sort())
      .toEqual([ids.pre, ids.preLater].sort());
  });

  it('shows signed-in callers the active post-login messages, and refuses anonymous ones', async () => {
    const { r, ids } = await seeded();
    expect(await failure(r.call('read', 'sys/internal/ui/authenticated-messages', undefined))).toEqual({ status: 403, message: 'permission denied' });
    expect((await r.call('read', 'sys/internal/ui/authenticated-messages', 'not-a-token')).status).toBe(403);
    const plain = (await r.token(r.root, { policies: ['default'] })).client_token;
    const data = (await r.ok('read', 'sys/internal/ui/authenticated-messages', plain)).body.data;
    expect(data.keys).toEqual([ids.post]);
    expect(data.key_info[ids.post]).toMatchObject({ title: 'post', type: 'modal', authenticated: true });
  });

  it('serves each namespace its own messages', async () => {
    const r = await rig();
    await r.ok('update', 'sys/namespaces/team', r.root);
    const rootPre = await create(r, msg({ authenticated: false }));
    const teamPre = (await inNs(r, 'team', 'update', BASE, r.root, msg({ authenticated: false }))).body.data.id;
    expect((await inNs(r, 'team', 'read', 'sys/internal/ui/unauthenticated-messages', undefined)).body.data.keys).toEqual([teamPre]);
    expect((await r.ok('read', 'sys/internal/ui/unauthenticated-messages', undefined)).body.data.keys).toEqual([rootPre]);
    expect((await inNs(r, 'team', 'read', `${BASE}/${rootPre}`, r.root)).status).toBe(404);
    expect((await r.call('read', `${BASE}/${teamPre}`, r.root)).status).toBe(404);
  });

  it('answers an empty list when nothing is active', async () => {
    const r = await rig();
    expect((await r.ok('read', 'sys/internal/ui/unauthenticated-messages', undefined)).body.data).toEqual({ keys: [], key_info: {} });
  });
});
