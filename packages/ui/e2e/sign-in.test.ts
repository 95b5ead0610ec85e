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
});
