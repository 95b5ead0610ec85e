import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeClock } from '../clock';
import { silentLogger } from '../logger';
import { fileAuditDevice } from './file-device';
import { hmacOf } from './format';
import type { AuditDevice, AuditRequestInput } from './types';
import { refusal } from '../test-support/refusal';

const salt = Buffer.alloc(32, 9);
const clock = new FakeClock(Date.UTC(2026, 0, 1));

function create(options: Record<string, string>): Promise<AuditDevice> {
  return fileAuditDevice.create({ path: 'file/', options, salt, clock, logger: silentLogger });
}


const request: AuditRequestInput = {
  request: {
    id: 'r1', operation: 'update', path: 'secret/data/app', mountType: 'kv', clientToken: 'hvs.root', clientTokenAccessor: 'acc',
    data: { data: { password: 'correct horse battery staple' } },
  },
  auth: { clientToken: 'hvs.root', accessor: 'acc', policies: ['root'], tokenPolicies: ['root'], displayName: 'root', tokenType: 'service' },
};

async function lines(file: string): Promise<Record<string, any>[]> { // eslint-disable-line @typescript-eslint/no-explicit-any
  return (await readFile(file, 'utf8')).split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
}

describe('the file audit device', () => {
  let dir: string;
  const devices: AuditDevice[] = [];
  const open = async (options: Record<string, string>) => {
    const d = await create(options);
    devices.push(d);
    return d;
  };

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'strongroom-audit-file-'));
  });

  afterEach(async () => {
    await Promise.all(devices.splice(0).map((d) => d.close().catch(() => undefined)));
    await rm(dir, { recursive: true, force: true });
  });

  it('appends one JSON line per request and per response, hashed by default', async () => {
    const file = join(dir, 'audit.log');
    await writeFile(file, 'existing line\n');
    const device = await open({ file_path: file });
    await device.logRequest(request);
    await device.logResponse({ ...request, response: { data: { password: 'correct horse battery staple' } } });
    const text = await readFile(file, 'utf8');
    expect(text.startsWith('existing line\n')).toBe(true);
    expect(text).not.toContain('correct horse battery staple');
    expect(text).not.toContain('hvs.root');
    const [req, resp] = await lines(file);
    expect(req?.['type']).toBe('request');
    expect(req?.['request']['data']).toEqual({ data: { password: hmacOf(salt, 'correct horse battery staple') } });
    expect(req?.['auth']['accessor']).toBe(device.hash('acc'));
    expect(resp?.['type']).toBe('response');
    expect(resp?.['response']['data']).toEqual({ password: device.hash('correct horse battery staple') });
  });

  it('writes in the clear with log_raw, and leaves accessors readable with hmac_accessor=false', async () => {
    const raw = join(dir, 'raw.log');
    await (await open({ file_path: raw, log_raw: 'true' })).logRequest(request);
    expect(await readFile(raw, 'utf8')).toContain('correct horse battery staple');

    const plainAccessor = join(dir, 'acc.log');
    await (await open({ file_path: plainAccessor, hmac_accessor: 'false' })).logRequest(request);
    const [entry] = await lines(plainAccessor);
    expect(entry?.['auth']['accessor']).toBe('acc');
    expect(entry?.['auth']['client_token']).toBe(hmacOf(salt, 'hvs.root'));
  });

  it('puts the prefix before each line', async () => {
    const file = join(dir, 'prefixed.log');
    const device = await open({ file_path: file, prefix: 'AUDIT ' });
    await device.logRequest(request);
    await device.logRequest(request);
    const text = await readFile(file, 'utf8');
    expect(text.split('\n').filter(Boolean).every((l) => l.startsWith('AUDIT {'))).toBe(true);
  });

  it('creates the file with mode 0600 unless told otherwise, and leaves it alone with 0000', async () => {
    const a = join(dir, 'a.log');
    await open({ file_path: a });
    expect((await stat(a)).mode & 0o777).toBe(0o600);
    const b = join(dir, 'b.log');
    await open({ file_path: b, mode: '0640' });
    expect((await stat(b)).mode & 0o777).toBe(0o640);
    const c = join(dir, 'c.log');
    await writeFile(c, '', { mode: 0o644 });
    await open({ file_path: c, mode: '0000' });
    expect((await stat(c)).mode & 0o777).toBe(0o644);
  });

  it('keeps lines whole when many entries are written at once', async () => {
    const file = join(dir, 'busy.log');
    const device = await open({ file_path: file });
    const big = { ...request, request: { ...request.request, data: { blob: 'x'.repeat(200_000) } } };
    await Promise.all(Array.from({ length: 20 }, (_, i) => device.logRequest({ ...big, request: { ...big.request, id: `r${i}` } })));
    const all = await lines(file);
    expect(all.map((e) => e['request']['id']).sort()).toEqual(Array.from({ length: 20 }, (_, i) => `r${i}`).sort());
  });

  it('accepts stdout (also spelled -) and discard', async () => {
    await (await open({ file_path: 'discard' })).logRequest(request);
    const write = jest.spyOn(process.stdout, 'write').mockImplementation(((_chunk: unknown, cb?: (err?: Error) => void) => {
      cb?.();
      return true;
    }) as typeof process.stdout.write);
    try {
      await (await open({ file_path: 'stdout' })).logRequest(request);
      expect(String(write.mock.calls[0]?.[0])).toContain('"type":"request"');
      await (await open({ file_path: '-' })).logRequest(request);
      expect(String(write.mock.calls[1]?.[0])).toContain('"type":"request"');
    } finally {
      write.mockRestore();
    }
  });

  it('refuses bad options with a 400 naming the option', async () => {
    const cases: [Record<string, string>, RegExp][] = [
      [{}, /"options\.file_path"/],
      [{ file_path: join(dir, 'x.log'), format: 'jsonx' }, /"options\.format".*jsonx.*not supported/],
      [{ file_path: join(dir, 'x.log'), format: 'yaml' }, /"options\.format"/],
      [{ file_path: join(dir, 'x.log'), log_raw: 'maybe' }, /"options\.log_raw"/],
      [{ file_path: join(dir, 'x.log'), hmac_accessor: 'yes' }, /"options\.hmac_accessor"/],
      [{ file_path: join(dir, 'x.log'), mode: '0999' }, /"options\.mode"/],
      [{ file_path: join(dir, 'x.log'), mode: 'rw-------' }, /"options\.mode"/],
    ];
    for (const [options, message] of cases) {
      const err = await refusal(create(options));
      expect(err.status).toBe(400);
      expect(err.message).toMatch(message);
    }
  });

  it('refuses a file it cannot open for appending, naming file_path', async () => {
    const notADir = join(dir, 'plain');
    await writeFile(notADir, '');
    for (const path of [dir, join(notADir, 'audit.log'), join(dir, 'missing', 'audit.log')]) {
      const err = await refusal(create({ file_path: path }));
      expect(err.status).toBe(400);
      expect(err.message).toContain('"options.file_path"');
      expect(err.message).toContain(path);
    }
  });
});
