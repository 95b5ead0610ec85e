import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { aeadDecrypt, type AeadKeyType } from './crypto';
import { standardBase64 } from './codec';
import { SealPool, sealPool } from './seal-pool';

const TYPES: [AeadKeyType, number][] = [['aes128-gcm96', 16], ['aes256-gcm96', 32], ['chacha20-poly1305', 32]];

const opened = (type: AeadKeyType, key: Buffer, text: string, prefix = 'vault:v3:') =>
  aeadDecrypt(type, key, Buffer.from(text.slice(prefix.length), 'base64'));

describe('the seal pool for large encrypt batches', () => {
  const pools: SealPool[] = [];
  const pool = (size: number) => {
    const p = new SealPool(size);
    pools.push(p);
    return p;
  };
  afterAll(async () => {
    await Promise.all([sealPool.stop(), ...pools.map((p) => p.stop())]);
  });

  it('has one thread per core', () => {
    expect(sealPool.size).toBe(availableParallelism());
  });

  it.each(TYPES)('decodes and seals with %s what this thread decrypts, in order, each with its own nonce', async (type, size) => {
    const key = randomBytes(size);
    const plaintexts = Array.from({ length: 150 }, (_, i) => Buffer.from(`item ${i} `.repeat(i)));
    const sealed = await pool(3).seal(type, key, 'vault:v3:', plaintexts.map((p) => p.toString('base64')));
    expect(sealed).toHaveLength(150);
    const nonces = new Set<string>();
    sealed.forEach((text, i) => {
      expect(text?.startsWith('vault:v3:')).toBe(true);
      nonces.add(Buffer.from((text as string).slice('vault:v3:'.length), 'base64').subarray(0, 12).toString('hex'));
      expect(opened(type, key, text as string).equals(plaintexts[i] as Buffer)).toBe(true);
    });
    expect(nonces.size).toBe(150);
  });

  it('seals items larger than its reused buffer between small ones', async () => {
    const key = randomBytes(32);
    const plaintexts = [randomBytes(10), randomBytes(200_000), randomBytes(5000), randomBytes(70_000), randomBytes(3)];
    const sealed = await pool(1).seal('aes256-gcm96', key, 'vault:v3:', plaintexts.map((p) => p.toString('base64')));
    sealed.forEach((text, i) => expect(opened('aes256-gcm96', key, text as string).equals(plaintexts[i] as Buffer)).toBe(true));
  });

  it('answers null for plaintext that is not standard base64, and takes base64 wrapped over lines', async () => {
    const key = randomBytes(32);
    const wrapped = randomBytes(200).toString('base64').replace(/(.{76})/g, '$1\n');
    const inputs = ['bm90IGJhc2U2NA', 'not base64!', 'ab-_', 'Zm9v\r\nYmFy', wrapped, '', 'Zm9v=', '€€€€'];
    const sealed = await pool(2).seal('aes256-gcm96', key, 'vault:v3:', inputs);
    expect(sealed.map((s) => s === null)).toEqual([true, true, true, false, false, false, true, true]);
    // The same decoder as a single request's, whatever it takes or refuses.
    sealed.forEach((text, i) => expect(text === null ? null : opened('aes256-gcm96', key, text)).toEqual(standardBase64(inputs[i] as string)));
    expect(opened('aes256-gcm96', key, sealed[3] as string).toString()).toBe('foobar');
  });

  it('starts again after it was stopped, failing only what was in flight', async () => {
    const p = pool(2);
    const key = randomBytes(32);
    const inFlight = p.seal('aes256-gcm96', key, 'p:', Array.from({ length: 4000 }, () => randomBytes(1024).toString('base64')));
    await p.stop();
    await expect(inFlight).rejects.toThrow(/seal pool thread exited/);
    const [text] = await p.seal('aes256-gcm96', key, 'p:', [Buffer.from('again').toString('base64')]);
    expect(opened('aes256-gcm96', key, text as string, 'p:').toString()).toBe('again');
  });

  it('never keeps the process alive once its work is done', () => {
    const script = `
      const { SealPool } = require(${JSON.stringify(require.resolve('./seal-pool'))});
      new SealPool(2).seal('aes256-gcm96', Buffer.alloc(32, 1), 'p:', Array.from({ length: 100 }, () => 'AAAA'))
        .then((out) => console.log('sealed', out.length));
    `;
    const run = spawnSync(process.execPath, ['-r', 'sucrase/register/ts', '-e', script], { encoding: 'utf8', timeout: 60_000 });
    expect(run.stderr).toBe('');
    expect(run.stdout.trim()).toBe('sealed 100');
    expect(run.status).toBe(0);
  });

  it('gives its threads none of the process environment, arguments or preloaded modules', async () => {
    const threads = require('node:worker_threads') as typeof import('node:worker_threads');
    const options: unknown[] = [];
    const Recording = class extends threads.Worker {
      constructor(source: string, opts: import('node:worker_threads').WorkerOptions) {
        super(source, opts);
        options.push(opts);
      }
    };
    const real = threads.Worker;
    threads.Worker = Recording;
    try {
      await pool(1).seal('aes256-gcm96', randomBytes(32), 'p:', ['AAAA']);
    } finally {
      threads.Worker = real;
    }
    expect(options).toEqual([expect.objectContaining({ env: {}, argv: [], execArgv: [] })]);
  });
});
