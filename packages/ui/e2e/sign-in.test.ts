import type { Browser } from 'playwright-core';
import { launchBrowser, openPage, screenshotBoth, signIn, startUiServer, type UiServer } from './support/ui-harness';

jest.setTimeout(180_000);

describe('signing in to the web UI', () => {
  let server: UiServer;
  let browser: Browser;

  beforeAll(async () => {
    [server, browser] = await Promise.all([startUiServer(), launchBrowser()]);
  });
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });

  it('takes a token, keeps it out of the URL and localStorage, and shows the pages it may use', async () => {
    const { page, problems, close } = await openPage(browser);
    try {
      await page.goto(`${server.url}/ui/`);
      await page.getByLabel('Token').waitFor();
      await screenshotBoth(page, 'sign-in', 'sign-in');

      await signIn(page, server.url, server.rootToken);
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Dashboard' }).waitFor();
      expect(page.url()).not.toContain(server.rootToken);
      expect(await page.evaluate(() => JSON.stringify(localStorage))).not.toContain(server.rootToken);
      expect(await page.evaluate(() => sessionStorage.getItem('strongroom.session'))).toContain(server.rootToken);
      await screenshotBoth(page, 'sign-in', 'signed-in');

      // A reload keeps the session (sessionStorage); signing out forgets it.
      await page.reload();
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.getByLabel('Token').waitFor();
      expect(await page.evaluate(() => sessionStorage.getItem('strongroom.session'))).toBeNull();
      expect(problems).toEqual([]);
    } finally {
      await close();
    }
  });

  it('shows the API\'s words for a token it refuses', async () => {
    const { page, close } = await openPage(browser, 'phone');
    try {
      await page.goto(`${server.url}/ui/`);
      await page.getByLabel('Token').fill('not-a-token');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('alert').filter({ hasText: 'permission denied' }).waitFor();
    } finally {
      await close();
    }
  });

  async function tokenFor(policies: string[]): Promise<string> {
    const res = await server.api<{ auth: { client_token: string } }>('POST', 'auth/token/create', { policies, ttl: '1h' });
    return res.body.auth.client_token;
  }

  it('hides the admin pages from a token with a narrow policy, and refuses them when asked by URL', async () => {
    await server.api('PUT', 'sys/policies/acl/app-reader', {
      policy: 'path "secret/data/app/*" { capabilities = ["read"] }\npath "secret/metadata/app/*" { capabilities = ["read", "list"] }',
    });
    await server.api('POST', 'secret/data/app/config', { data: { mode: 'narrow' } });
    const token = await tokenFor(['app-reader']);
    const { page, problems, close } = await openPage(browser);
    try {
      await signIn(page, server.url, token, '/ui/');
      const nav = page.getByRole('navigation', { name: 'Main' });
      await nav.getByRole('link', { name: 'Secrets' }).waitFor();
      expect(await nav.getByRole('link', { name: 'Messages' }).count()).toBe(0);
      expect(await nav.getByRole('link', { name: 'Dashboard' }).count()).toBe(0);
      // Lands on the first page it may use, and its mounts come from the UI's own listing.
      await page.getByRole('link', { name: 'secret/' }).waitFor();
      await screenshotBoth(page, 'sign-in', 'narrow-policy');

      await page.goto(`${server.url}/ui/messages`);
      await page.getByRole('heading', { name: 'Not allowed' }).waitFor();
      expect(await page.getByRole('button', { name: 'New message' }).count()).toBe(0);

      await page.goto(`${server.url}/ui/secrets/kv/secret/show/app/config`);
      await page.getByRole('button', { name: 'Reveal mode' }).click();
      expect(await page.locator('.secrets-value[data-key="mode"]').textContent()).toBe('narrow');
      expect(problems).toEqual([]);
    } finally {
      await close();
    }
  });

  it('returns to sign-in when the token is revoked behind its back, and shows a refusal in place otherwise', async () => {
    const token = await tokenFor(['app-reader']);
    const { page, close } = await openPage(browser, 'phone');
    try {
      await signIn(page, server.url, token, '/ui/secrets/kv/secret/list/app');
      await page.getByRole('link', { name: 'config' }).waitFor();
      // A refusal on a path the policy does not grant is shown as the API words it, signed in still.
      await page.goto(`${server.url}/ui/secrets/kv/secret/list/other`);
      await page.getByRole('alert').filter({ hasText: 'permission denied' }).waitFor();
      expect(await page.getByRole('button', { name: 'Sign out' }).count()).toBe(1);

      expect((await server.api('POST', 'auth/token/revoke', { token })).status).toBe(204);
      await page.getByRole('navigation', { name: 'Breadcrumbs' }).getByRole('link', { name: 'secret', exact: true }).click();
      await page.getByLabel('Token').waitFor();
      await page.getByRole('status').filter({ hasText: 'no longer valid' }).waitFor();
      expect(await page.evaluate(() => sessionStorage.getItem('strongroom.session'))).toBeNull();
    } finally {
      await close();
    }
  });

  it('sends the chosen namespace with every call, so the pages show that namespace', async () => {
    const inTeam = (method: string, path: string, body?: unknown) => fetch(`${server.url}/v1/${path}`, {
      method,
      headers: { 'X-Vault-Token': server.rootToken, 'X-Vault-Namespace': 'team', 'Content-Type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    expect((await server.api('POST', 'sys/namespaces/team', {})).status).toBeLessThan(300);
    expect((await inTeam('POST', 'sys/mounts/team-kv', { type: 'kv', options: { version: '2' } })).status).toBeLessThan(300);
    expect((await inTeam('POST', 'team-kv/data/only-in-team', { data: { a: '1' } })).status).toBeLessThan(300);
    const { page, close } = await openPage(browser);
    try {
      await page.goto(`${server.url}/ui/secrets`);
      await page.getByLabel('Token').fill(server.rootToken);
      await page.getByLabel(/^Namespace/).fill('team');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByText('ns: team').waitFor();
      await page.getByRole('link', { name: 'team-kv/' }).waitFor();
      expect(await page.getByRole('link', { name: 'secret/' }).count()).toBe(0);
      await page.getByRole('link', { name: 'team-kv/' }).click();
      await page.getByRole('link', { name: 'only-in-team' }).waitFor();
    } finally {
      await close();
    }
  });
});
