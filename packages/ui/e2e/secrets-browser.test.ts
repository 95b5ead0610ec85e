import type { Browser } from 'playwright-core';
import { launchBrowser, openPage, screenshotBoth, signIn, startUiServer, type UiServer } from './support/ui-harness';

jest.setTimeout(180_000);

interface KvRead {
  data: { data: Record<string, string>; metadata: { version: number } };
}

describe('the secrets browser', () => {
  let server: UiServer;
  let browser: Browser;

  beforeAll(async () => {
    [server, browser] = await Promise.all([startUiServer(), launchBrowser()]);
    await server.api('POST', 'sys/mounts/transit', { type: 'transit' });
    await server.api('POST', 'transit/keys/payments', { type: 'aes256-gcm96' });
    await server.api('POST', 'transit/keys/payments/rotate', {});
  });
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });

  it('writes a secret from key/value rows that reads back through the API', async () => {
    const { page, problems, close } = await openPage(browser);
    try {
      await signIn(page, server.url, server.rootToken, '/ui/secrets');
      await page.getByRole('link', { name: 'secret/' }).click();
      await page.getByRole('button', { name: 'New secret' }).click();
      await page.getByLabel(/^Path under/).fill('team/app/db');
      await page.getByLabel('Key 1').fill('username');
      await page.getByLabel('Value 1').fill('app-user');
      await page.getByRole('button', { name: 'Add row' }).click();
      await page.getByLabel('Key 2').fill('password');
      await page.getByLabel('Value 2').fill('browser-written-pw');
      await page.getByRole('button', { name: 'Save secret' }).click();
      await page.getByRole('heading', { name: 'team/app/db' }).waitFor();

      const read = await server.api<KvRead>('GET', 'secret/data/team/app/db');
      expect(read.status).toBe(200);
      expect(read.body.data.data).toEqual({ username: 'app-user', password: 'browser-written-pw' });

      // A second version, as JSON.
      await page.getByRole('button', { name: 'New version' }).click();
      await page.getByRole('button', { name: 'JSON' }).click();
      await page.getByLabel('JSON').fill('{"username": "app-user", "password": "second-pw", "port": "5432"}');
      await page.getByRole('button', { name: 'Save version' }).click();
      await page.locator('.secrets-versions tr[data-version="2"]').waitFor();
      const second = await server.api<KvRead>('GET', 'secret/data/team/app/db');
      expect(second.body.data.metadata.version).toBe(2);
      expect(second.body.data.data).toEqual({ username: 'app-user', password: 'second-pw', port: '5432' });

      // Folders come from LIST.
      await page.getByRole('navigation', { name: 'Breadcrumbs' }).getByRole('link', { name: 'secret', exact: true }).click();
      await page.getByRole('link', { name: 'team/' }).click();
      await page.getByRole('link', { name: 'app/' }).click();
      await page.getByRole('link', { name: 'db', exact: true }).waitFor();
      await screenshotBoth(page, 'secrets-browser', 'folder');
      expect(problems).toEqual([]);
    } finally {
      await close();
    }
  });

  it('reads a secret written through the API, masked until revealed, and copies a value', async () => {
    await server.api('POST', 'secret/data/billing/stripe', { data: { api_key: 'sk-api-written-1234', region: 'eu' } });
    const { page, context, problems, close } = await openPage(browser);
    try {
      await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url });
      await signIn(page, server.url, server.rootToken, '/ui/secrets/kv/secret/show/billing/stripe');
      const value = page.locator('.secrets-value[data-key="api_key"]');
      await value.waitFor();
      expect(await value.textContent()).not.toContain('sk-api-written-1234');
      expect(await page.content()).not.toContain('sk-api-written-1234');
      await screenshotBoth(page, 'secrets-browser', 'secret-masked');

      await page.getByRole('button', { name: 'Reveal api_key' }).click();
      expect(await value.textContent()).toBe('sk-api-written-1234');
      await screenshotBoth(page, 'secrets-browser', 'secret-revealed');
      await page.getByRole('button', { name: 'Hide api_key' }).click();
      expect(await value.textContent()).not.toContain('sk-api-written-1234');

      await page.getByRole('button', { name: 'Copy region' }).click();
      await page.getByRole('button', { name: 'Copy region' }).getByText('Copied').waitFor();
      expect(await page.evaluate('navigator.clipboard.readText()')).toBe('eu');
      expect(problems).toEqual([]);
    } finally {
      await close();
    }
  });

  it('deletes, undeletes and destroys versions, and shows the metadata', async () => {
    await server.api('POST', 'secret/data/versions/demo', { data: { v: 'one' } });
    await server.api('POST', 'secret/data/versions/demo', { data: { v: 'two' } });
    const { page, close } = await openPage(browser, 'phone');
    try {
      await signIn(page, server.url, server.rootToken, '/ui/secrets/kv/secret/show/versions/demo');
      const v2 = page.locator('.secrets-versions tr[data-version="2"]');
      const v1 = page.locator('.secrets-versions tr[data-version="1"]');
      await v2.waitFor();
      await v2.getByRole('button', { name: 'Delete' }).click();
      await v2.getByText('deleted', { exact: true }).waitFor();
      await page.getByText('Version 2 is deleted').waitFor();
      const meta = await server.api<{ data: { versions: Record<string, { deletion_time: string; destroyed: boolean }> } }>('GET', 'secret/metadata/versions/demo');
      expect(meta.body.data.versions['2']?.deletion_time).not.toBe('');

      await v2.getByRole('button', { name: 'Undelete' }).click();
      await v2.getByText('active', { exact: true }).waitFor();
      expect((await server.api<KvRead>('GET', 'secret/data/versions/demo')).body.data.data).toEqual({ v: 'two' });

      await v1.getByRole('button', { name: 'Destroy' }).click();
      await v1.getByRole('button', { name: 'Destroy version 1' }).click();
      await v1.getByText('destroyed', { exact: true }).waitFor();
      const after = await server.api<{ data: { versions: Record<string, { destroyed: boolean }> } }>('GET', 'secret/metadata/versions/demo');
      expect(after.body.data.versions['1']?.destroyed).toBe(true);
      await page.locator('.secrets-meta').getByText('Current version').waitFor();
      await screenshotBoth(page, 'secrets-browser', 'versions');
    } finally {
      await close();
    }
  });

  it('lists transit keys and shows a key\'s type, versions and rotation', async () => {
    const { page, problems, close } = await openPage(browser);
    try {
      await signIn(page, server.url, server.rootToken, '/ui/secrets');
      await page.getByRole('link', { name: 'transit/' }).click();
      await page.getByRole('link', { name: 'payments' }).click();
      const details = page.locator('.transit-key');
      await details.getByText('aes256-gcm96').waitFor();
      expect(await page.locator('.transit-versions tbody tr').count()).toBe(2);
      await screenshotBoth(page, 'secrets-browser', 'transit-key');
      expect(problems).toEqual([]);
    } finally {
      await close();
    }
  });

  it('shows the API\'s words when a write is refused', async () => {
    const { page, close } = await openPage(browser);
    try {
      await signIn(page, server.url, server.rootToken, '/ui/secrets/kv/secret/list/');
      await page.getByRole('button', { name: 'New secret' }).click();
      await page.getByLabel(/^Path under/).fill('bad');
      await page.getByRole('button', { name: 'JSON' }).click();
      await page.getByLabel('JSON').fill('[1, 2]');
      await page.getByRole('button', { name: 'Save secret' }).click();
      await page.getByRole('alert').filter({ hasText: 'The JSON must be an object' }).waitFor();
    } finally {
      await close();
    }
  });
});
