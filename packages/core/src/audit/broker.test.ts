import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeClock } from '../clock';
import type { Logger } from '../logger';
import { Barrier } from '../seal/barrier';
import { Keyring } from '../seal/keyring';
import { MemoryStorage } from '../storage/memory-storage';
import { getJson, jsonOp } from '../storage/logical';
import { AUDIT_TABLE_KEY, AuditBroker, LOCAL_AUDIT_TABLE_KEY } from './broker';
import type { AuditDeviceFactory, AuditRequestInput } from './types';
import { refusal } from '../test-support/refusal';

interface Logged {
  level: string;
  msg: string;
  fields?: Record<string, unknown>;
}

function recordingLogger(): Logger & { lines: Logged[] } {
  const lines: Logged[] = [];
  const at = (level: string) => (msg: string, fields?: Record<string, unknown>) => {
    lines.push({ level, msg, ...(fields ? { fields } : {}) });
  };
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

/** A device type whose writes fail while `failing` is set, to stand in for a full disk or a dead socket. */
function flakyFactory(): AuditDeviceFactory & { failing: boolean; written: string[] } {
  const state = {
    type: 'flaky', failing: false, written: [] as string[],
    async create() {
      const write = async (id: string) => {
        if (state.failing) throw new Error('device unavailable');
        state.written.push(id);
      };
      return {
        logRequest: (i: AuditRequestInput) => write(`request:${i.request.id}`),
        logResponse: (i: AuditRequestInput) => write(`response:${i.request.id}`),
        hash: (s: string) => `flaky:${s}`,
        close: async () => {},
      };
    },
  };
  return state;
}


const SECRET = 'tr0ub4dor&3-very-secret';

function writeRequest(id: string): AuditRequestInput {
  return {
    request: {
      id, operation: 'update', path: 'secret/data/db', mountPoint: 'secret/', mountType: 'kv', mountAccessor: 'kv_abcd',
      clientToken: 'hvs.root-token', clientTokenAccessor: 'accessor-1', data: { data: { password: SECRET } },
    },
    auth: { clientToken: 'hvs.root-token', accessor: 'accessor-1', policies: ['root'], tokenPolicies: ['root'], displayName: 'root', tokenType: 'service' },
  };
}

describe('the audit broker', () => {
  let dir: string;
  let storage: MemoryStorage;
  let keyring: Keyring;
  let logger: ReturnType<typeof recordingLogger>;
  let flaky: ReturnType<typeof flakyFactory>;
  const brokers: AuditBroker[] = [];
  const clock = new FakeClock(Date.UTC(2026, 0, 1));

  /** A broker over a fresh barrier on the shared storage, as after a restart and unseal. */
  function newBroker(options: { foreignSharedTable?: boolean } = {}): AuditBroker {
    const barrier = new Barrier(storage);
    barrier.unseal(keyring);
    const broker = new AuditBroker({
      storage: barrier, logger, clock, factories: [flaky],
      ...(options.foreignSharedTable ? { sharedTableIsForeign: () => true } : {}),
    });
    brokers.push(broker);
    return broker;
  }

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'strongroom-audit-broker-'));
    storage = new MemoryStorage();
    keyring = Keyring.create(new Date(clock.now()));
    logger = recordingLogger();
    flaky = flakyFactory();
  });

  afterEach(async () => {
    await Promise.all(brokers.splice(0).map((b) => b.clear()));
    await rm(dir, { recursive: true, force: true });
  });

  it('does nothing and needs nothing while no device is enabled', async () => {
    const broker = newBroker();
    await broker.load();
    expect(broker.active).toBe(false);
    await broker.logRequest(writeRequest('r1'));
    await broker.logResponse({ ...writeRequest('r1'), response: null, error: 'boom' });
    expect(broker.list()).toEqual([]);
  });

  it('never writes a secret in the clear; the log holds its HMAC, which hash() reproduces', async () => {
    const broker = newBroker();
    await broker.load();
    const file = join(dir, 'audit.log');
    await broker.enable('file', 'file', 'main log', { file_path: file }, false);
    await broker.logRequest(writeRequest('r1'));
    await broker.logResponse({ ...writeRequest('r1'), response: { data: { password: SECRET } } });
    const text = await readFile(file, 'utf8');
    expect(text).not.toContain(SECRET);
    expect(text).not.toContain('hvs.root-token');
    expect(text).not.toContain('accessor-1');
    const digest = broker.hash('file', SECRET);
    expect(digest).toMatch(/^hmac-sha256:[0-9a-f]{64}$/);
    // The response entry repeats the request, so the value shows three times.
    expect(text.split(digest).length - 1).toBe(3);
    expect(text).toContain(broker.hash('file/', 'hvs.root-token'));
  });

  it('writes the secret in the clear on a log_raw device only', async () => {
    const broker = newBroker();
    await broker.load();
    const hashed = join(dir, 'hashed.log');
    const raw = join(dir, 'raw.log');
    await broker.enable('hashed', 'file', '', { file_path: hashed }, false);
    await broker.enable('raw', 'file', '', { file_path: raw, log_raw: 'true' }, false);
    await broker.logRequest(writeRequest('r1'));
    expect(await readFile(raw, 'utf8')).toContain(SECRET);
    expect(await readFile(hashed, 'utf8')).not.toContain(SECRET);
  });

  it('gives each device its own salt, and a new one when a path is enabled again', async () => {
    const broker = newBroker();
    await broker.load();
    await broker.enable('a', 'file', '', { file_path: 'discard' }, false);
    await broker.enable('b', 'file', '', { file_path: 'discard' }, false);
    const first = broker.hash('a', 'x');
    expect(broker.hash('b', 'x')).not.toBe(first);
    expect(await broker.disable('a')).toBe(true);
    await broker.enable('a', 'file', '', { file_path: 'discard' }, false);
    expect(broker.hash('a', 'x')).not.toBe(first);
  });

  it('keeps enabled devices, options and salts across a reload over the same storage', async () => {
    const file = join(dir, 'audit.log');
    const first = newBroker();
    await first.load();
    await first.enable('/team/file/', 'file', 'team log', { file_path: file, hmac_accessor: 'false' }, true);
    await first.enable('spare', 'file', '', { file_path: 'discard' }, false);
    const before = first.hash('team/file', SECRET);
    await first.clear();
    expect(first.active).toBe(false);
    expect(first.list()).toEqual([]);

    const second = newBroker();
    await second.load();
    expect(second.active).toBe(true);
    expect(second.list()).toEqual([
      { path: 'spare/', type: 'file', description: '', options: { file_path: 'discard' }, local: false },
      { path: 'team/file/', type: 'file', description: 'team log', options: { file_path: file, hmac_accessor: 'false' }, local: true },
    ]);
    expect(second.hash('team/file/', SECRET)).toBe(before);
    await second.logRequest(writeRequest('after-reload'));
    const text = await readFile(file, 'utf8');
    expect(text).toContain('after-reload');
    expect(text).toContain(before);
    expect(text).toContain('"accessor":"accessor-1"');
  });

  /** The paths of the shared and the local table as stored. */
  async function storedTables(): Promise<{ shared: string[]; local: string[] }> {
    const barrier = new Barrier(storage);
    barrier.unseal(keyring);
    const paths = async (key: string) => ((await getJson<Array<{ path: string }>>(barrier, key)) ?? []).map((e) => e.path);
    return { shared: await paths(AUDIT_TABLE_KEY), local: await paths(LOCAL_AUDIT_TABLE_KEY) };
  }

  it('keeps local devices in a table of their own, and writes only the table a change touches', async () => {
    const broker = newBroker();
    await broker.load();
    await broker.enable('everywhere', 'flaky', '', {}, false);
    const put = jest.spyOn(storage, 'txn');
    await broker.enable('here', 'flaky', '', {}, true);
    expect(put.mock.calls.flatMap(([ops]) => ops.map((op) => op.key))).toEqual([LOCAL_AUDIT_TABLE_KEY]);
    expect(await storedTables()).toEqual({ shared: ['everywhere/'], local: ['here/'] });
    const again = newBroker();
    await again.load();
    expect(again.list().map((d) => [d.path, d.local])).toEqual([['everywhere/', false], ['here/', true]]);
    put.mockClear();
    await again.disable('here');
    expect(put.mock.calls.flatMap(([ops]) => ops.map((op) => op.key))).toEqual([LOCAL_AUDIT_TABLE_KEY]);
    expect(await storedTables()).toEqual({ shared: ['everywhere/'], local: [] });
  });

  it('moves a local device found in the shared table to the local one, and leaves it to the cluster whose table it is', async () => {
    const barrier = new Barrier(storage);
    barrier.unseal(keyring);
    const device = (path: string, local: boolean) => ({ path, type: 'flaky', description: '', options: {}, local, salt: 'c2FsdA==' });
    await barrier.txn([jsonOp(AUDIT_TABLE_KEY, [device('old-shared/', false), device('old-local/', true)])]);

    const secondary = newBroker({ foreignSharedTable: true });
    await secondary.load();
    expect(secondary.list().map((d) => d.path)).toEqual(['old-shared/']);

    const broker = newBroker();
    await broker.load();
    expect(broker.list().map((d) => [d.path, d.local])).toEqual([['old-local/', true], ['old-shared/', false]]);
    await broker.enable('new-shared', 'flaky', '', {}, false);
    expect(await storedTables()).toEqual({ shared: ['old-shared/', 'new-shared/'], local: ['old-local/'] });
  });

  it('stores the table, salts included, only through the barrier', async () => {
    const broker = newBroker();
    await broker.load();
    await broker.enable('file', 'file', 'a description', { file_path: 'discard' }, false);
    const physical = await storage.get(AUDIT_TABLE_KEY);
    expect(physical).not.toBeNull();
    expect(physical?.toString('latin1')).not.toContain('a description');
    expect(physical?.toString('latin1')).not.toContain('salt');
  });

  it('fails the log call when every enabled device fails, so the request is refused', async () => {
    const broker = newBroker();
    await broker.load();
    await broker.enable('one', 'flaky', '', {}, false);
    await broker.enable('two', 'flaky', '', {}, false);
    flaky.failing = true;
    const err = await refusal(broker.logRequest(writeRequest('r1')));
    expect(err.status).toBe(500);
    await expect(broker.logResponse({ ...writeRequest('r1'), response: null })).rejects.toThrow(/no audit device recorded the response/);
    expect(logger.lines.filter((l) => l.level === 'error').length).toBe(2);
  });

  it('succeeds with a warning when one of several devices fails', async () => {
    const broker = newBroker();
    await broker.load();
    const file = join(dir, 'good.log');
    await broker.enable('good', 'file', '', { file_path: file }, false);
    await broker.enable('bad', 'flaky', '', {}, false);
    flaky.failing = true;
    await broker.logRequest(writeRequest('r1'));
    expect(await readFile(file, 'utf8')).toContain('"id":"r1"');
    const warnings = logger.lines.filter((l) => l.level === 'warn');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]?.fields?.['path']).toBe('bad/');
    expect(JSON.stringify(logger.lines)).not.toContain(SECRET);
  });

  it('treats a file that cannot take writes (a full disk) as a failed device', async () => {
    const broker = newBroker();
    await broker.load();
    await broker.enable('full', 'file', '', { file_path: '/dev/full' }, false);
    expect((await refusal(broker.logRequest(writeRequest('r1')))).status).toBe(500);
    await broker.enable('spare', 'file', '', { file_path: join(dir, 'spare.log') }, false);
    await broker.logRequest(writeRequest('r2'));
    expect(logger.lines.some((l) => l.level === 'warn' && l.fields?.['path'] === 'full/')).toBe(true);
  });

  it('refuses unknown types, clashing paths and bad options with a 400, and stores nothing then', async () => {
    const broker = newBroker();
    await broker.load();
    await broker.enable('logs/main', 'file', '', { file_path: 'discard' }, false);
    const cases: [() => Promise<unknown>, RegExp][] = [
      [() => broker.enable('x', 'syslogd', '', {}, false), /"type".*syslogd/],
      [() => broker.enable('logs/main/', 'file', '', { file_path: 'discard' }, false), /"path".*already in use/],
      [() => broker.enable('logs', 'file', '', { file_path: 'discard' }, false), /"path".*already in use at "logs\/main\/"/],
      [() => broker.enable('logs/main/deeper', 'file', '', { file_path: 'discard' }, false), /"path".*already in use/],
      [() => broker.enable('y', 'file', '', {}, false), /"options\.file_path"/],
      [() => broker.enable('z', 'file', '', { file_path: join(dir, 'no', 'such', 'dir.log') }, false), /"options\.file_path"/],
      [() => broker.enable('../up', 'file', '', { file_path: 'discard' }, false), /"path"/],
    ];
    for (const [attempt, message] of cases) {
      const err = await refusal(attempt());
      expect(err.status).toBe(400);
      expect(err.message).toMatch(message);
    }
    expect(broker.list().map((d) => d.path)).toEqual(['logs/main/']);
    const reloaded = newBroker();
    await reloaded.load();
    expect(reloaded.list().map((d) => d.path)).toEqual(['logs/main/']);
  });

  it('lets only one of two simultaneous enables at the same path win', async () => {
    const broker = newBroker();
    await broker.load();
    const results = await Promise.allSettled([
      broker.enable('same', 'file', 'first', { file_path: 'discard' }, false),
      broker.enable('same', 'file', 'second', { file_path: 'discard' }, false),
    ]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    expect(broker.list()).toHaveLength(1);
  });

  it('disables a device: gone from the list, the table and audit-hash; disabling nothing is no error', async () => {
    const broker = newBroker();
    await broker.load();
    const file = join(dir, 'audit.log');
    await broker.enable('file', 'file', '', { file_path: file }, false);
    expect(await broker.disable('file/')).toBe(true);
    expect(await broker.disable('file/')).toBe(false);
    expect(broker.active).toBe(false);
    expect(broker.list()).toEqual([]);
    expect(() => broker.hash('file', 'x')).toThrow(/no audit device is enabled at "file\/"/);
    await broker.logRequest(writeRequest('after-disable'));
    expect(await readFile(file, 'utf8')).not.toContain('after-disable');
    const reloaded = newBroker();
    await reloaded.load();
    expect(reloaded.list()).toEqual([]);
  });

  it('skips a device it cannot reopen on load, and refuses to load when none can be opened', async () => {
    const sub = join(dir, 'sub');
    await mkdir(sub);
    const first = newBroker();
    await first.load();
    await first.enable('gone', 'file', '', { file_path: join(sub, 'audit.log') }, false);
    const goneHash = first.hash('gone', SECRET);
    await first.enable('kept', 'file', '', { file_path: join(dir, 'kept.log') }, false);
    await first.clear();
    await rm(sub, { recursive: true });

    const second = newBroker();
    await second.load();
    expect(second.list().map((d) => d.path)).toEqual(['gone/', 'kept/']);
    expect(logger.lines.some((l) => l.level === 'error' && l.fields?.['path'] === 'gone/')).toBe(true);
    expect(second.hash('gone', SECRET)).toBe(goneHash);
    await second.logRequest(writeRequest('r1'));
    expect(await readFile(join(dir, 'kept.log'), 'utf8')).toContain('"id":"r1"');
    await second.disable('kept');
    await second.clear();

    const third = newBroker();
    await expect(third.load()).rejects.toThrow(/none of the enabled audit devices could be opened/);
  });
});
