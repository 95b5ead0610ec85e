import { statSync } from 'node:fs';
import { join } from 'node:path';
import { run } from './test-support/cli-runner';
import { useDevServer } from './test-support/dev-server-fixture';
import { onTerminal } from './test-support/terminal';

/** Snapshot progress and replication status through the built command against a dev server. */
describe('the operations commands through the built command', () => {
  const server = useDevServer();


  it('snapshot save and restore print no progress when stderr is piped', async () => {
    const file = join(server.dir, 'piped.snap');
    const saved = await run(['operator', 'raft', 'snapshot', 'save', file], { env: server.env });
    expect(saved).toEqual({ code: 0, err: '', out: `Snapshot saved to ${file} (${statSync(file).size} bytes)\n` });
    const restored = await run(['operator', 'raft', 'snapshot', 'restore', file], { env: server.env });
    expect(restored).toEqual({ code: 0, err: '', out: `Snapshot restored from ${file} (${statSync(file).size} bytes)\n` });
  }, 60_000);

  it('snapshot save and restore draw a progress line on a terminal and clear it', async () => {
    const file = join(server.dir, 'terminal.snap');
    const saved = await onTerminal(['operator', 'raft', 'snapshot', 'save', file], server.env);
    expect(saved.code).toBe(0);
    expect(saved.screen).toMatch(/\r\x1b\[KSaving snapshot {2}[\d.]+ (B|KiB|MiB)/);
    // Cleared before the result: the result starts a clean line.
    expect(saved.screen).toContain(`\r\x1b[KSnapshot saved to ${file}`);
    const restored = await onTerminal(['operator', 'raft', 'snapshot', 'restore', file], server.env);
    expect(restored.code).toBe(0);
    expect(restored.screen).toMatch(/\r\x1b\[KRestoring snapshot {2}[\d.]+ (B|KiB|MiB) \/ [\d.]+ (B|KiB|MiB) {2}\d+%/);
    expect(restored.screen).toContain(`\r\x1b[KSnapshot restored from ${file}`);
  }, 90_000);

  it('replication status shows both kinds disabled, then this server as a DR primary with no secondaries', async () => {
    const off = await run(['operator', 'replication', 'status'], { env: { VAULT_ADDR: server.dev.address } });
    expect(off).toMatchObject({ code: 0, err: '' });
    expect(off.out).toMatch(/^== DR ==\nKey\s+Value\n-+\s+-+\nMode\s+disabled\n\n== Performance ==\nKey\s+Value\n-+\s+-+\nMode\s+disabled\n$/);

    expect((await run(['write', 'sys/replication/dr/primary/enable', 'primary_cluster_addr=https://127.0.0.1:26299'], { env: server.env })).code).toBe(0);
    const on = await run(['operator', 'replication', 'status'], { env: { VAULT_ADDR: server.dev.address } });
    expect(on).toMatchObject({ code: 0, err: '' });
    expect(on.out).toMatch(/^Mode\s+primary$/m);
    expect(on.out).toMatch(/^State\s+running$/m);
    expect(on.out).toMatch(/^Last WAL\s+\d+$/m);
    expect(on.out).toMatch(/^Primary Cluster Addr\s+https:\/\/127\.0\.0\.1:26299$/m);
    expect(on.out).toContain('No secondaries are connected or activated.');
    const json = JSON.parse((await run(['operator', 'replication', 'status', '-format=json'], { env: server.env })).out);
    expect(json.data.performance).toEqual({ mode: 'disabled' });
    expect(json.data.dr).toMatchObject({ mode: 'primary', state: 'running' });
    expect(on.out).toMatch(new RegExp(`^Cluster ID\\s+${json.data.dr.cluster_id}$`, 'm'));
    expect(on.out).toMatch(new RegExp(`^Merkle Root\\s+${(json.data.dr.merkle_root as string).slice(0, 12)}$`, 'm'));
  }, 60_000);
});
