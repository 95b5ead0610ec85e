/** The deployhost-project emulator against the host's own SDK (run in a child process: ESM only). */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { runCli } from '../cli';
import { DeployhostProjectEmulator } from './emulator';

// Each SDK batch starts a Node process that loads the SDK: seconds on a loaded machine.
jest.setTimeout(120_000);

type Result = { ok?: Record<string, any>; error?: { statusCode: number; body: string } };

let emulator: DeployhostProjectEmulator;
let token: string;

beforeAll(async () => {
  emulator = await DeployhostProjectEmulator.start();
  token = emulator.createToken({ teams: ['team_a'] }).token;
});

afterAll(() => emulator.close());

/** Runs SDK calls in order against `serverURL` (the emulator's by default). */
async function sdk(calls: Array<{ method: string; request: object }>, bearerToken = token, serverURL = emulator.url): Promise<Result[]> {
  const script = join(__dirname, 'test-support', 'run-sdk.mjs');
  const { stdout } = await promisify(execFile)(process.execPath, [script, JSON.stringify({ serverURL, bearerToken, calls })], {
    timeout: 60_000,
  });
  return JSON.parse(stdout) as Result[];
}

const errorOf = (result: Result | undefined): { status: number; code: string; message: string } => {
  const body = JSON.parse(result!.error!.body) as { error: { code: string; message: string } };
  return { status: result!.error!.statusCode, ...body.error };
};

const create = (idOrName: string, requestBody: object, extra: object = {}) => ({
  method: 'projects.createProjectEnv',
  request: { idOrName, upsert: 'true', requestBody, ...extra },
});

describe('deployhost-project env vars with the SDK', () => {
  it('creates, upserts a new value, reads, edits and deletes one variable per key and target', async () => {
    const project = emulator.createProject({ name: 'shop' });
    const [created, upserted, listed] = await sdk([
      create('shop', { key: 'DB_PASSWORD', value: 'one', type: 'encrypted', target: ['production', 'preview'] }),
      create(project.id, { key: 'DB_PASSWORD', value: 'two', type: 'encrypted', target: ['production', 'preview'] }),
      { method: 'projects.filterProjectEnvs', request: { idOrName: 'shop' } },
    ]);
    const id = created!.ok!.created.id as string;
    expect(created!.ok).toMatchObject({ created: { key: 'DB_PASSWORD', type: 'encrypted', target: ['production', 'preview'] }, failed: [] });
    expect(upserted!.ok!.created.id).toBe(id);
    // The list shows encrypted values as ciphertext, never the value itself.
    expect(listed!.ok!.envs).toEqual([expect.objectContaining({ id, key: 'DB_PASSWORD', decrypted: false })]);
    expect(listed!.ok!.envs[0].value).not.toBe('two');
    expect(emulator.envs('shop')).toEqual([expect.objectContaining({ id, value: 'two' })]);

    const [read, edited, removed, gone, again] = await sdk([
      { method: 'projects.getProjectEnv', request: { idOrName: 'shop', id } },
      { method: 'projects.editProjectEnv', request: { idOrName: 'shop', id, requestBody: { value: 'three', target: ['production'] } } },
      { method: 'projects.removeProjectEnv', request: { idOrName: 'shop', id } },
      { method: 'projects.getProjectEnv', request: { idOrName: 'shop', id } },
      { method: 'projects.removeProjectEnv', request: { idOrName: 'shop', id } },
    ]);
    expect(read!.ok).toMatchObject({ id, value: 'two', decrypted: true });
    expect(edited!.ok).toMatchObject({ id, value: 'three', target: ['production'] });
    expect(removed!.ok).toMatchObject({ id, key: 'DB_PASSWORD' });
    expect(errorOf(gone)).toMatchObject({ status: 404, code: 'env_not_found' });
    expect(errorOf(again).status).toBe(404);
    expect(emulator.envs('shop')).toEqual([]);
  });

  it('keeps one variable per target environment, and refuses a clash without upsert', async () => {
    emulator.createProject({ name: 'targets' });
    const [prod, dev, clash] = await sdk([
      create('targets', { key: 'API_KEY', value: 'p', type: 'encrypted', target: ['production'] }),
      create('targets', { key: 'API_KEY', value: 'd', type: 'plain', target: ['development'] }),
      { method: 'projects.createProjectEnv', request: { idOrName: 'targets', requestBody: { key: 'API_KEY', value: 'x', type: 'plain', target: ['production'] } } },
    ]);
    expect(prod!.ok!.created.id).not.toBe(dev!.ok!.created.id);
    expect(errorOf(clash)).toMatchObject({ status: 400, code: 'ENV_ALREADY_EXISTS' });
    expect(emulator.envs('targets').map((e) => [e.key, e.target, e.value])).toEqual([
      ['API_KEY', ['production'], 'p'],
      ['API_KEY', ['development'], 'd'],
    ]);
    const [decrypted] = await sdk([{ method: 'projects.filterProjectEnvs', request: { idOrName: 'targets', decrypt: 'true' } }]);
    expect(decrypted!.ok!.envs.map((e: { value: string; decrypted: boolean }) => [e.value, e.decrypted])).toEqual([
      ['p', true],
      ['d', false],
    ]);
  });

  it('refuses bad keys, values, types and targets, naming the field', async () => {
    emulator.createProject({ name: 'rules' });
    const results = await sdk([
      create('rules', { key: '1ABC', value: 'v', type: 'plain', target: ['production'] }),
      create('rules', { key: 'A-B', value: 'v', type: 'plain', target: ['production'] }),
      create('rules', { key: 'BIG', value: 'x'.repeat(64 * 1024 + 1), type: 'plain', target: ['production'] }),
      create('rules', { key: 'S', value: 'v', type: 'sensitive', target: ['development'] }),
    ]);
    expect(results.map((r) => errorOf(r))).toEqual([
      expect.objectContaining({ status: 400, code: 'invalid_key', message: expect.stringContaining('body.key') }),
      expect.objectContaining({ status: 400, code: 'invalid_key' }),
      expect.objectContaining({ status: 400, code: 'env_value_too_large', message: expect.stringContaining('body.value') }),
      expect.objectContaining({ status: 400, code: 'invalid_target' }),
    ]);
    const raw = await fetch(`${emulator.url}/v10/projects/rules/env`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ key: 'A', value: 'v', type: 'plain', target: ['staging'] }),
    });
    expect([raw.status, await raw.json()]).toEqual([400, { error: expect.objectContaining({ code: 'invalid_target' }) }]);
    expect(emulator.envs('rules')).toEqual([]);
  });

  it('refuses missing and unknown tokens, and team projects without their team', async () => {
    emulator.createProject({ name: 'team-site', teamId: 'team_a' });
    const [unknown] = await sdk([create('team-site', { key: 'A', value: 'v', type: 'plain', target: ['preview'] })], 'not-a-token');
    expect(errorOf(unknown)).toMatchObject({ status: 403, code: 'forbidden' });
    const missing = await fetch(`${emulator.url}/v10/projects/team-site/env`);
    expect([missing.status, await missing.json()]).toEqual([403, { error: expect.objectContaining({ missingToken: true }) }]);

    const [noTeam, otherTeam, withTeam] = await sdk([
      { method: 'projects.filterProjectEnvs', request: { idOrName: 'team-site' } },
      { method: 'projects.filterProjectEnvs', request: { idOrName: 'team-site', teamId: 'team_b' } },
      create('team-site', { key: 'A', value: 'v', type: 'plain', target: ['preview'] }, { teamId: 'team_a' }),
    ]);
    expect(errorOf(noTeam)).toMatchObject({ status: 404, code: 'not_found' });
    expect(errorOf(otherTeam).status).toBe(403);
    expect(withTeam!.ok!.created).toMatchObject({ key: 'A', value: 'v' });
    const [missingProject] = await sdk([{ method: 'projects.filterProjectEnvs', request: { idOrName: 'nowhere' } }]);
    expect(errorOf(missingProject)).toMatchObject({ status: 404, message: 'Project not found' });
  });

  it('shows everything stored on the admin view and fails the next requests on demand', async () => {
    const admin = async (path: string, body?: object): Promise<any> => {
      const response = await fetch(`${emulator.url}/_admin/${path}`, body ? { method: 'POST', body: JSON.stringify(body) } : {});
      return response.json();
    };
    const project = (await admin('projects', { name: 'admin-view' })) as { id: string };
    const { token: adminToken } = (await admin('tokens', {})) as { token: string };
    await sdk([create('admin-view', { key: 'SEALED', value: 'hidden', type: 'sensitive', target: ['production'] })], adminToken);
    const { projects } = (await admin('projects')) as { projects: Array<{ id: string; envs: unknown[] }> };
    expect(projects.find((p) => p.id === project.id)!.envs).toEqual([expect.objectContaining({ key: 'SEALED', value: 'hidden' })]);

    await admin('faults', { count: 2, status: 503 });
    const [first, second, third] = await sdk([
      { method: 'projects.filterProjectEnvs', request: { idOrName: 'admin-view' } },
      { method: 'projects.filterProjectEnvs', request: { idOrName: 'admin-view' } },
      { method: 'projects.filterProjectEnvs', request: { idOrName: 'admin-view' } },
    ]);
    expect([first!.error!.statusCode, second!.error!.statusCode]).toEqual([503, 503]);
    // A sensitive value never leaves through the API.
    expect(third!.ok!.envs).toEqual([expect.objectContaining({ key: 'SEALED', value: '' })]);
  });
});

describe('deployhost-project from the command line', () => {
  it('starts with --listen, prints a token and a project, and stops', async () => {
    let printed = '';
    const running = await runCli(['deployhost-project', '--listen', '127.0.0.1:0'], { write: (t: string) => (printed += t) });
    expect(running).toBeDefined();
    try {
      const serverURL = /serverURL: (\S+)/.exec(printed)![1]!;
      const cliToken = /DEPLOYHOST_TOKEN=(\S+)/.exec(printed)![1]!;
      const project = /DEPLOYHOST_PROJECT_ID=(\S+)/.exec(printed)![1]!;
      const [result] = await sdk([create(project, { key: 'K', value: 'v', type: 'plain', target: ['preview'] })], cliToken, serverURL);
      expect(result!.ok!.created).toMatchObject({ key: 'K', value: 'v' });
    } finally {
      await running!.stop();
    }
  });
});
