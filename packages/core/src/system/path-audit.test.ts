import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AuditBroker } from '../audit/broker';
import { FakeClock } from '../clock';
import { Backend } from '../framework/backend';
import { BackendHarness } from '../framework/testing';
import { OPERATIONS } from '../framework/types';
import { silentLogger } from '../logger';
import { Barrier } from '../seal/barrier';
import { Keyring } from '../seal/keyring';
import { MemoryStorage } from '../storage/memory-storage';
import { auditPaths } from './path-audit';
import { refusal } from '../test-support/refusal';


describe('sys/audit paths', () => {
  let dir: string;
  let broker: AuditBroker;
  let backend: Backend;
  let sys: BackendHarness;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'strongroom-path-audit-'));
    const barrier = new Barrier(new MemoryStorage());
    barrier.unseal(Keyring.create(new Date()));
    broker = new AuditBroker({ storage: barrier, logger: silentLogger, clock: new FakeClock() });
    await broker.load();
    backend = new Backend('system', auditPaths(() => broker));
    sys = new BackendHarness(backend, { path: 'sys/', type: 'system' });
  });

  afterEach(async () => {
    await broker.clear();
    await rm(dir, { recursive: true, force: true });
  });

  it('needs sudo and the root namespace for every operation on every audit path', () => {
    for (const path of ['audit', 'audit/file', 'audit/a/b', 'audit-hash/file']) {
      const match = backend.match(path);
      expect(match).not.toBeNull();
      expect(backend.isRestricted(match!)).toBe(true);
      for (const op of OPERATIONS) if (backend.supports(match!, op)) expect(backend.needsSudo(match!, op)).toBe(true);
    }
  });

  it('enables a file device, lists it keyed by path with a trailing slash, and disables it', async () => {
    const file = join(dir, 'audit.log');
    expect(await sys.request('write', 'audit/file', { type: 'file', description: 'main', options: { file_path: file, log_raw: false }, local: true })).toBeNull();
    const listed = await sys.request('read', 'audit');
    expect(listed?.copyDataToTop).toBe(true);
    expect(listed?.data).toEqual({
      'file/': { type: 'file', description: 'main', options: { file_path: file, log_raw: 'false' }, local: true, path: 'file/' },
    });
    expect(await sys.request('delete', 'audit/file')).toBeNull();
    expect((await sys.request('read', 'audit'))?.data).toEqual({});
    // Disabling what is not enabled answers 204 too.
    expect(await sys.request('delete', 'audit/file')).toBeNull();
  });

  it('accepts a trailing slash and nested paths', async () => {
    await sys.request('write', 'audit/team/ops/', { type: 'file', options: { file_path: 'discard' } });
    expect(Object.keys((await sys.request('read', 'audit'))?.data ?? {})).toEqual(['team/ops/']);
  });

  it('answers audit-hash with the value the device writes', async () => {
    const file = join(dir, 'audit.log');
    await sys.request('write', 'audit/file', { type: 'file', options: { file_path: file } });
    const reply = await sys.request('write', 'audit-hash/file', { input: 'hunter2' });
    expect(reply?.copyDataToTop).toBe(true);
    const hash = reply?.data?.['hash'];
    expect(hash).toBe(broker.hash('file/', 'hunter2'));
    expect(hash).toMatch(/^hmac-sha256:[0-9a-f]{64}$/);
    await broker.logRequest({ request: { id: 'r', operation: 'update', path: 'secret/x', data: { password: 'hunter2' } } });
    expect(await readFile(file, 'utf8')).toContain(String(hash));
  });

  it('refuses bad input with a 400 naming the field', async () => {
    await sys.request('write', 'audit/taken', { type: 'file', options: { file_path: 'discard' } });
    const cases: [Record<string, unknown>, string, RegExp][] = [
      [{ options: { file_path: 'discard' } }, 'audit/a', /"type"/],
      [{ type: 'socket', options: { address: 'x' } }, 'audit/a', /"type".*"socket"/],
      [{ type: 'file' }, 'audit/a', /"options\.file_path"/],
      [{ type: 'file', options: { file_path: '' } }, 'audit/a', /"options\.file_path"/],
      [{ type: 'file', options: { file_path: join(dir, 'missing', 'x.log') } }, 'audit/a', /"options\.file_path"/],
      [{ type: 'file', options: { file_path: dir } }, 'audit/a', /"options\.file_path"/],
      [{ type: 'file', options: { file_path: 0 } }, 'audit/a', /"options\.file_path": must be an absolute/],
      [{ type: 'file', options: { file_path: true } }, 'audit/a', /"options\.file_path": must be an absolute/],
      [{ type: 'file', options: { file_path: 'audit.log' } }, 'audit/a', /"options\.file_path": must be an absolute/],
      [{ type: 'file', options: { file_path: '../audit.log' } }, 'audit/a', /"options\.file_path": must be an absolute/],
      [{ type: 'file', options: { path: 'audit.log' } }, 'audit/a', /"options\.file_path": must be an absolute/],
      [{ type: 'file', options: { file_path: join(dir, 'a\0b.log') } }, 'audit/a', /"options\.file_path": must be an absolute/],
      [{ type: 'file', options: { file_path: 'discard', format: 'jsonx' } }, 'audit/a', /"options\.format".*not supported/],
      [{ type: 'file', options: { file_path: 'discard', nested: { a: 1 } } }, 'audit/a', /"options\.nested"/],
      [{ type: 'file', options: 'file_path=discard' }, 'audit/a', /"options"/],
      [{ type: 'file', options: { file_path: 'discard' } }, 'audit/taken', /"path".*already in use/],
      [{ type: 'file', options: { file_path: 'discard' } }, 'audit/taken/sub', /"path".*already in use/],
      [{ type: 'file', local: 'sometimes', options: { file_path: 'discard' } }, 'audit/a', /"local"/],
    ];
    for (const [data, path, message] of cases) {
      const err = await refusal(sys.request('write', path, data));
      expect(err.status).toBe(400);
      expect(err.message).toMatch(message);
    }
    expect(Object.keys((await sys.request('read', 'audit'))?.data ?? {})).toEqual(['taken/']);

    expect((await refusal(sys.request('write', 'audit-hash/nothing', { input: 'x' }))).message).toMatch(/"path".*nothing\//);
    expect((await refusal(sys.request('write', 'audit-hash/taken', {}))).message).toMatch(/"input"/);
  });
});
