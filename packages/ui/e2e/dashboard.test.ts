import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { api, launchTestCluster, until, type TestCluster } from '../../cli/src/cluster/test-support/cluster-fixture';
import { launchBrowser, openPage, screenshotBoth, signIn } from './support/ui-harness';

/**
 * The dashboard against real processes: a 3-node primary cluster (API ports 26400, 26410,
 * 26420) and a 1-node DR secondary (26460), the UI served by the primary's active node. It shows
 * the peers, snapshots and sync destinations, then the DR secondary's state and its lag as the
 * primary writes and the secondary catches up; a narrow token sees only what its policy reads.
 */

jest.setTimeout(240_000);

let primary: TestCluster;
let secondary: TestCluster;
let browser: Browser;
let addr: string;
let root: string;

async function call(method: string, path: string, body?: unknown, token = root): Promise<void> {
  const r = await api(addr, method, path, { token, ...(body === undefined ? {} : { body }) });
  if (r.status >= 300) throw new Error(`${method} ${path} answered ${r.status}: ${r.text}`);
}

/** One card of the dashboard, by its `data-card` name. */
function card(page: Page, name: string) {
  return page.locator(`[data-card="${name}"]`);
}

beforeAll(async () => {
  // The clusters one after the other: four servers starting at once on a busy machine can miss the launcher's deadlines.
  const clusters = async () => {
    primary = await launchTestCluster('ui-dash-primary', { nodes: 3, basePort: 26400 });
    secondary = await launchTestCluster('ui-dash-dr', { nodes: 1, basePort: 26460 });
  };
  [, browser] = await Promise.all([clusters(), launchBrowser()]);
  addr = (await primary.cluster.waitActive(60_000)).apiAddr;
  root = primary.cluster.rootToken;
  await call('POST', 'sys/mounts/secret', { type: 'kv', options: { version: '2' } });
  await call('POST', 'secret/data/app/db', { data: { password: 'not-shown' } });
  await call('POST', 'sys/storage/raft/snapshot-auto/config/every-5s', {
    interval: '5s', retain: 1, storage_type: 'local', path_prefix: join(primary.dir, 'snapshots'), local_max_space: 100_000_000,
  });
  await call('POST', 'sys/storage/raft/snapshot-auto/config/too-small', {
    interval: '5s', storage_type: 'local', path_prefix: join(primary.dir, 'snapshots'), file_prefix: 'small', local_max_space: 10,
  });
  await call('POST', 'sys/sync/destinations/repohost/app-repo', { access_token: 'unused', repository_owner: 'acme', repository_name: 'app' });
  await call('POST', 'sys/sync/destinations/repohost/app-repo/associations/set', { mount: 'secret', secret_name: 'app/db' });
}, 240_000);

afterAll(async () => {
  await browser?.close();
  await primary?.destroy();
  await secondary?.destroy();
});

it('shows the cluster\'s seal, HA and three Raft peers, its snapshots and its sync destinations', async () => {
  const { page, problems, close } = await openPage(browser);
  try {
    await signIn(page, addr, root, '/ui/dashboard');
    const peers = card(page, 'peers').locator('tbody tr');
    await until('three peers on the dashboard', 60_000, async () => ((await peers.count()) === 3 ? true : undefined), 250);
    expect((await peers.locator('td:first-child').allTextContents()).sort()).toEqual(['node1', 'node2', 'node3']);
    expect(await card(page, 'peers').getByText('leader', { exact: true }).count()).toBe(1);
    await card(page, 'peers').getByText('healthy', { exact: true }).first().waitFor();
    await card(page, 'seal').getByText('unsealed').waitFor();
    await card(page, 'ha').getByText('active', { exact: true }).waitFor();
    await card(page, 'replication-dr').getByText('Not enabled on this cluster.').waitFor();

    // A snapshot taken shows its size; one that cannot be written shows the server's reason.
    await card(page, 'snapshots').locator('tr[data-snapshot="every-5s"] td:nth-child(4)').filter({ hasText: /\d+(\.\d)? (B|KiB|MiB)/ }).waitFor({ timeout: 60_000 });
    await card(page, 'snapshots').locator('tr[data-snapshot="too-small"]').filter({ hasText: /\d+ failed/ }).waitFor({ timeout: 60_000 });
    await card(page, 'snapshots').locator('tr[data-snapshot-error="too-small"]').filter({ hasText: /^not enough space/ }).waitFor();
    const destination = card(page, 'sync').locator('tr[data-destination="repohost/app-repo"]');
    await destination.waitFor();
    expect(await destination.locator('td:nth-child(3)').textContent()).toBe('1');
    await screenshotBoth(page, 'dashboard', 'cluster');
    expect(problems).toEqual([]);
  } finally {
    await close();
  }
});

it('shows a DR secondary\'s state and lag, back to 0 once it holds the writes the primary took meanwhile', async () => {
  await call('POST', 'sys/replication/dr/primary/enable', {});
  const issued = await api(addr, 'POST', 'sys/replication/dr/primary/secondary-token', { token: root, body: { id: 'dr-east' } });
  if (issued.status !== 200) throw new Error(`secondary-token answered ${issued.status}: ${issued.text}`);
  const sNode = await secondary.cluster.waitActive(60_000);
  const enabled = await api(sNode.apiAddr, 'POST', 'sys/replication/dr/secondary/enable', {
    token: secondary.cluster.rootToken, body: { token: issued.json.wrap_info.token },
  });
  if (enabled.status !== 200) throw new Error(`secondary/enable answered ${enabled.status}: ${enabled.text}`);

  const { page, problems, close } = await openPage(browser);
  try {
    await signIn(page, addr, root, '/ui/dashboard');
    const dr = card(page, 'replication-dr');
    const row = dr.locator('tr[data-secondary="dr-east"]');
    await row.filter({ hasText: 'connected' }).waitFor({ timeout: 90_000 });
    const lag = row.locator('[data-field="lag"]');
    const caughtUp = async () => {
      const last = Number(await dr.locator('[data-field="last_wal"]').textContent());
      return (await lag.textContent()) === '0 WAL' ? last : undefined;
    };
    const before = await until('the secondary to catch up on the dashboard', 90_000, caughtUp, 250);

    // Writes move last_wal; the lag the page shows comes back to 0 once the secondary has them.
    for (let i = 0; i < 20; i++) await call('POST', `secret/data/load/k${i}`, { data: { n: i } });
    const after = await until('the dashboard to show the writes replicated', 90_000, async () => {
      const last = await caughtUp();
      return last !== undefined && last > before ? last : undefined;
    }, 250);
    expect(await row.locator('[data-field="last_remote_wal"]').textContent()).toBe(String(after));
    await dr.locator('g[data-series="dr-east"] polyline').waitFor({ timeout: 30_000 });
    expect(await dr.getByRole('img').getAttribute('aria-label')).toMatch(/^dr-east: 0 WAL entries now, at most \d+ over the last 5 minutes$/);
    await screenshotBoth(page, 'dashboard', 'dr-secondary');
    expect(problems).toEqual([]);
  } finally {
    await close();
  }
});

it('leaves out the cards a narrow token may not read, and shows the API\'s words where a read is refused', async () => {
  await call('PUT', 'sys/policies/acl/dash-narrow', {
    policy: [
      'path "sys/storage/raft/autopilot/state" { capabilities = ["read"] }',
      'path "sys/storage/raft/snapshot-auto/config" { capabilities = ["list", "sudo"] }',
    ].join('\n'),
  });
  const created = await api(addr, 'POST', 'auth/token/create', { token: root, body: { policies: ['dash-narrow'] } });
  const token = created.json.auth.client_token as string;

  const { page, close } = await openPage(browser, 'phone');
  try {
    await signIn(page, addr, token, '/ui/dashboard');
    await page.locator('[data-updated]').waitFor();
    await card(page, 'peers').locator('tbody tr').nth(2).waitFor();
    await card(page, 'snapshots').locator('tr[data-snapshot="every-5s"]').filter({ hasText: 'permission denied' }).waitFor();
    expect(await card(page, 'sync').count()).toBe(0);
    expect(await card(page, 'seal').count()).toBe(1);
    await screenshotBoth(page, 'dashboard', 'narrow-token');
  } finally {
    await close();
  }
});

it('refreshes every 5 s while open, and stops once the page is left', async () => {
  const { page, close } = await openPage(browser);
  try {
    // The page's clock is moved by hand, so "no refresh after leaving" is checked without waiting.
    await page.clock.install();
    // Counts the dashboard's autopilot reads in the page (written as text: these tests have no DOM types).
    await page.addInitScript({
      content: `window.autopilotReads = 0;
        const original = window.fetch.bind(window);
        window.fetch = (input, init) => {
          if (String(input).includes('/v1/sys/storage/raft/autopilot/state')) window.autopilotReads++;
          return original(input, init);
        };`,
    });
    const reads = async () => Number(await page.evaluate('window.autopilotReads'));
    await signIn(page, addr, root, '/ui/dashboard');
    await card(page, 'peers').locator('tbody tr').nth(2).waitFor();
    const first = await reads();
    expect(first).toBeGreaterThanOrEqual(1);
    const updated = () => page.locator('[data-updated]').getAttribute('data-updated');
    const before = await updated();
    await page.clock.runFor(5_000);
    // Waits for the round to finish, not only to start, so the next one is already scheduled.
    await until('a refresh 5 s later', 30_000, async () => ((await reads()) > first && (await updated()) !== before ? true : undefined), 100);

    // In-app navigation, as a link does it: the page unmounts without a reload.
    await page.evaluate(`window.history.pushState(null, '', '/ui/elsewhere');
      window.dispatchEvent(new Event('strongroom:navigate'));`);
    await page.getByRole('heading', { name: 'Not found' }).waitFor();
    const left = await reads();
    await page.clock.runFor(60_000);
    expect(await reads()).toBe(left);
  } finally {
    await close();
  }
});
