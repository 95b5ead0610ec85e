import type { Browser } from 'playwright-core';
import { createMessage, deleteAllMessages } from './support/messages';
import { launchBrowser, openPage, screenshotBoth, signIn, startUiServer, type UiServer } from './support/ui-harness';

jest.setTimeout(180_000);

describe('custom messages in the web UI', () => {
  let server: UiServer;
  let browser: Browser;

  beforeAll(async () => {
    [server, browser] = await Promise.all([startUiServer(), launchBrowser()]);
  });
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });
  beforeEach(async () => {
    await deleteAllMessages(server);
  });

  it('shows pre-login banners and a modal on the sign-in page, and the modal blocks signing in until acknowledged', async () => {
    await createMessage(server, { title: 'Maintenance tonight', body: 'The cluster restarts at 22:00 UTC.', type: 'banner', authenticated: false });
    await createMessage(server, { title: 'Authorized use only', body: 'Activity on this system is recorded.', type: 'modal', authenticated: false });
    // A post-login message must not show before sign-in.
    await createMessage(server, { title: 'Welcome back', body: 'Rotate your tokens.', type: 'banner', authenticated: true });
    const { page, problems, close } = await openPage(browser);
    try {
      await page.goto(`${server.url}/ui/`);
      const dialog = page.getByRole('dialog', { name: 'Authorized use only' });
      await dialog.waitFor();
      await page.locator('.banner').filter({ hasText: 'Maintenance tonight' }).waitFor();
      expect(await page.locator('.banner').filter({ hasText: 'The cluster restarts at 22:00 UTC.' }).count()).toBe(1);
      expect(await page.getByText('Welcome back').count()).toBe(0);
      await screenshotBoth(page, 'custom-messages', 'sign-in-with-modal');

      // Blocked: the form's fields are disabled while the modal is up, and the modal covers them.
      expect(await page.getByLabel('Token').isDisabled()).toBe(true);
      expect(await page.getByRole('button', { name: 'Sign in' }).isDisabled()).toBe(true);
      await dialog.getByRole('button', { name: 'Acknowledge' }).click();
      await dialog.waitFor({ state: 'detached' });
      expect(await page.getByLabel('Token').isDisabled()).toBe(false);
      await screenshotBoth(page, 'custom-messages', 'sign-in-with-banner');

      await page.getByLabel('Token').fill(server.rootToken);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.locator('.banner').filter({ hasText: 'Welcome back' }).waitFor();
      expect(await page.locator('.banner').filter({ hasText: 'Maintenance tonight' }).count()).toBe(0);
      expect(problems).toEqual([]);
    } finally {
      await close();
    }
  });

  it('shows a post-login modal after sign-in until it is acknowledged', async () => {
    await createMessage(server, { title: 'Policy change', body: 'Tokens now expire after 8 hours.', type: 'modal', authenticated: true });
    const { page, close } = await openPage(browser, 'phone');
    try {
      await page.goto(`${server.url}/ui/`);
      await page.getByLabel('Token').fill(server.rootToken);
      await page.getByRole('button', { name: 'Sign in' }).click();
      const dialog = page.getByRole('dialog', { name: 'Policy change' });
      await dialog.waitFor();
      await screenshotBoth(page, 'custom-messages', 'post-login-modal');
      // The page behind takes no input and the dialog has the focus, until it is acknowledged.
      expect(await page.locator('.shell-page').getAttribute('inert')).not.toBeNull();
      // The dialog takes the focus once it has rendered: polled, since that is a moment later.
      const focused = () => page.evaluate('document.activeElement?.textContent');
      for (const deadline = Date.now() + 10_000; (await focused()) !== 'Acknowledge' && Date.now() < deadline;) await new Promise((r) => setTimeout(r, 50));
      expect(await focused()).toBe('Acknowledge');
      await page.keyboard.press('Enter');
      await dialog.waitFor({ state: 'detached' });
      expect(await page.locator('.shell-page').getAttribute('inert')).toBeNull();
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.getByLabel('Token').waitFor();
    } finally {
      await close();
    }
  });

  it('creates a message in the admin page, with a live preview, that shows on the sign-in page after sign-out', async () => {
    const { page, problems, close } = await openPage(browser);
    try {
      await signIn(page, server.url, server.rootToken);
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Messages' }).click();
      await page.getByText('No messages match.').waitFor();
      await page.getByRole('link', { name: 'New message' }).click();
      await page.getByLabel('Title').fill('Read-only window');
      await page.getByLabel('Message', { exact: true }).fill('Writes are paused until 06:00.');
      await page.getByLabel('Type').selectOption('banner');
      await page.getByLabel('Audience').selectOption('before');
      // The preview follows the form as it is typed.
      const preview = page.locator('.messages-preview');
      await preview.locator('.banner').filter({ hasText: 'Writes are paused until 06:00.' }).waitFor();
      await screenshotBoth(page, 'custom-messages', 'admin-new-banner');
      await page.getByLabel('Type').selectOption('modal');
      await preview.locator('.modal-card').filter({ hasText: 'Read-only window' }).waitFor();
      await page.getByLabel('Type').selectOption('banner');
      await page.getByRole('button', { name: 'Create message' }).click();

      const row = page.locator('tr').filter({ hasText: 'Read-only window' });
      await row.waitFor();
      expect(await row.textContent()).toContain('before sign-in');
      expect(await row.textContent()).toContain('active');
      await screenshotBoth(page, 'custom-messages', 'admin-list');

      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.locator('.banner').filter({ hasText: 'Writes are paused until 06:00.' }).waitFor();
      expect(problems).toEqual([]);
    } finally {
      await close();
    }
  });

  it('filters the list, edits a message and deletes it', async () => {
    await createMessage(server, { title: 'Banner before', body: 'a', type: 'banner', authenticated: false });
    await createMessage(server, { title: 'Modal after', body: 'b', type: 'modal', authenticated: true });
    const { page, close } = await openPage(browser);
    try {
      await signIn(page, server.url, server.rootToken, '/ui/messages');
      await page.getByRole('dialog', { name: 'Modal after' }).getByRole('button', { name: 'Acknowledge' }).click();
      await page.locator('tr').filter({ hasText: 'Modal after' }).waitFor();
      await page.locator('tr').filter({ hasText: 'Banner before' }).waitFor();

      await page.getByLabel('Type').selectOption('modal');
      await page.locator('tr').filter({ hasText: 'Banner before' }).waitFor({ state: 'detached' });
      await page.locator('tr').filter({ hasText: 'Modal after' }).waitFor();
      await page.getByLabel('Type').selectOption('');
      await page.getByLabel('Audience').selectOption('false');
      await page.locator('tr').filter({ hasText: 'Modal after' }).waitFor({ state: 'detached' });
      await page.getByLabel('Audience').selectOption('');

      await page.locator('tr').filter({ hasText: 'Banner before' }).getByRole('link', { name: 'Edit' }).click();
      const title = page.getByLabel('Title');
      // Polled from here: a string predicate would be evaluated in the page, which its CSP refuses.
      for (const deadline = Date.now() + 30_000; (await title.inputValue()) !== 'Banner before';) {
        if (Date.now() > deadline) throw new Error(`the edit form never loaded the message's title (it shows "${await title.inputValue()}")`);
        await new Promise((r) => setTimeout(r, 50));
      }
      await title.fill('Banner renamed');
      await page.locator('.messages-preview .banner').filter({ hasText: 'Banner renamed' }).waitFor();
      await screenshotBoth(page, 'custom-messages', 'admin-edit');
      await page.getByRole('button', { name: 'Save message' }).click();
      const renamed = page.locator('tr').filter({ hasText: 'Banner renamed' });
      await renamed.waitFor();

      await renamed.getByRole('button', { name: 'Delete' }).click();
      await renamed.getByRole('button', { name: 'Delete it' }).click();
      await renamed.waitFor({ state: 'detached' });
      const left = await server.api<{ data: { keys: string[]; key_info: Record<string, { title: string }> } }>('GET', 'sys/config/ui/custom-messages?list=true');
      expect(Object.values(left.body.data.key_info).map((m) => m.title)).toEqual(['Modal after']);
    } finally {
      await close();
    }
  });

  it('shows the API\'s words when it refuses a message', async () => {
    const { page, close } = await openPage(browser);
    try {
      await signIn(page, server.url, server.rootToken, '/ui/messages/new');
      await page.getByLabel('Title').fill('Backwards');
      await page.getByLabel('Message', { exact: true }).fill('ends before it starts');
      await page.getByLabel('End').fill('2001-01-01T00:00:00');
      await page.getByRole('button', { name: 'Create message' }).click();
      await page.getByRole('alert').filter({ hasText: 'start time must occur before end time' }).waitFor();
    } finally {
      await close();
    }
  });
});
