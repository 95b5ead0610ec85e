/**
 * Core's barrier over the storage a server really uses (Raft on disk), seen from the disk: no
 * secret, token or key in any file, and a ciphertext moved on disk is refused.
 */
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RaftStorage } from '@strongroom/cluster';
import { testing } from '@strongroom/core';
import { kvEngine } from '@strongroom/engine-kv';
import { MemoryNetwork, RaftNode } from '@strongroom/raft';

const { callCore, combineShares, data, newCore, okCore, rig } = testing;

/** Disk storage as a server has it: a cluster of one, its log and state machine under `dir`. */
async function diskStorage(dir: string): Promise<RaftStorage> {
  const node = await RaftNode.open({
    id: 'n1', dataDir: dir, transport: new MemoryNetwork().transport('n1'), bootstrap: { voters: ['n1'], learners: [] }, tickMs: 10,
  });
  node.campaign();
  while (!node.isLeader) await new Promise((r) => setTimeout(r, 5));
  return new RaftStorage(node, { ownsNode: true });
}

async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await filesUnder(full)));
    else out.push(full);
  }
  return out;
}

/** Which of `needles` occur anywhere in any file below `dir`, by label. */
async function findOnDisk(dir: string, needles: Record<string, Buffer>): Promise<string[]> {
  const found = new Set<string>();
  for (const file of await filesUnder(dir)) {
    const bytes = await readFile(file);
    for (const [label, needle] of Object.entries(needles)) {
      if (bytes.includes(needle)) found.add(`${label} in ${file}`);
    }
  }
  return [...found];
}

function encodings(label: string, raw: Buffer): Record<string, Buffer> {
  return {
    [`${label} (raw)`]: raw,
    [`${label} (hex)`]: Buffer.from(raw.toString('hex')),
    [`${label} (HEX)`]: Buffer.from(raw.toString('hex').toUpperCase()),
    [`${label} (base64)`]: Buffer.from(raw.toString('base64')),
  };
}

describe('the barrier on disk', () => {
  let dir: string;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'strongroom-barrier-'));
  });

  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('leaves no secret value, token, unseal key, root key or data key in any file of the data directory', async () => {
    const secret = 'very-secret-value-4711';
    const v1Secret = 'kv-one-secret-value-0815';
    const storage = await diskStorage(dir);
    const r = await rig({ storage, shares: 5, threshold: 3, engines: [kvEngine] });
    expect(r.core.sealed).toBe(false);
    const rootKey = await combineShares(r.keys.slice(1, 4));
    const dataKey = Buffer.from(r.core.barrier.keyring().activeTerm.key);

    await r.ok('update', 'sys/mounts/secret', r.root, { type: 'kv', options: { version: '2' } });
    await r.ok('update', 'sys/mounts/kv1', r.root, { type: 'kv' });
    await r.ok('update', 'secret/data/app/db', r.root, { data: { password: secret } });
    await r.ok('update', 'kv1/app/db', r.root, { password: v1Secret });
    const childToken = await r.token(r.root, { policies: ['default'] });
    // Rotation adds a second data key, which must not leak either.
    await r.ok('update', 'sys/rotate', r.root);
    const secondDataKey = Buffer.from(r.core.barrier.keyring().activeTerm.key);
    expect(secondDataKey.equals(dataKey)).toBe(false);
    await r.ok('update', 'secret/data/app/after-rotation', r.root, { data: { password: secret } });

    // A value written below the barrier on purpose shows that the scan would see a plaintext.
    await storage.put('canary', Buffer.from('plaintext-canary-9876'));

    expect((await r.call('read', 'secret/data/app/db', r.root)).status).toBe(200);
    await r.core.close();

    const needles: Record<string, Buffer> = {
      'secret value': Buffer.from(secret),
      'kv v1 secret value': Buffer.from(v1Secret),
      'root token': Buffer.from(r.root),
      'child token': Buffer.from(childToken.client_token),
      'child accessor': Buffer.from(childToken.accessor),
      ...encodings('root key', rootKey),
      ...encodings('data key term 1', dataKey),
      ...encodings('data key term 2', secondDataKey),
    };
    r.keys.forEach((k, i) => Object.assign(needles, encodings(`unseal key ${i}`, k)));
    expect(await findOnDisk(dir, { canary: Buffer.from('plaintext-canary-9876') })).not.toEqual([]);
    expect(await findOnDisk(dir, needles)).toEqual([]);

    // And the data is all there after a restart.
    const reopened = await diskStorage(dir);
    const again = newCore({ storage: reopened, engines: [kvEngine] });
    try {
      for (const k of [r.keys[4], r.keys[0], r.keys[2]]) await again.unseal(k as Buffer);
      const read = await okCore(again, 'read', 'secret/data/app/db', r.root);
      expect(data(read)['data']).toEqual({ password: secret });
      const readNew = await okCore(again, 'read', 'secret/data/app/after-rotation', r.root);
      expect(data(readNew)['data']).toEqual({ password: secret });
      expect((await okCore(again, 'read', 'kv1/app/db', r.root)).body).toMatchObject({ data: { password: v1Secret } });
      expect((await callCore(again, 'read', 'auth/token/lookup-self', childToken.client_token)).status).toBe(200);
    } finally {
      await again.close();
    }
  });

  it('refuses a ciphertext moved to another key on disk while the server was down', async () => {
    const r = await rig({ storage: await diskStorage(dir), engines: [kvEngine] });
    await r.ok('update', 'sys/mounts/secret', r.root, { type: 'kv-v2' });
    await r.ok('update', 'secret/data/a', r.root, { data: { v: 'a' } });
    await r.ok('update', 'secret/data/b', r.root, { data: { v: 'b' } });
    const uuid = r.core.mounts.get('secret/')?.uuid as string;
    const keyA = `logical/${uuid}/meta/a`;
    const keyB = `logical/${uuid}/meta/b`;
    expect(await r.core.barrier.list(`logical/${uuid}/meta/`)).toEqual(['a', 'b']);
    await r.core.close();

    // An attacker with the disk swaps one secret's ciphertext in for another's.
    let storage = await diskStorage(dir);
    await storage.put(keyB, (await storage.get(keyA)) as Buffer);
    await storage.close();

    storage = await diskStorage(dir);
    const core = newCore({ storage, engines: [kvEngine] });
    try {
      await core.unseal(r.key);
      await expect(core.barrier.get(keyB)).rejects.toThrow();
      await expect(callCore(core, 'read', 'secret/data/b', r.root)).rejects.toThrow();
      expect((await callCore(core, 'read', 'secret/data/a', r.root)).status).toBe(200);
      expect(await core.barrier.get(keyA)).not.toBeNull();
    } finally {
      await core.close();
    }
  });
});
