/**
 * What the browser tests share: a real dev server started from the built command (as a user
 * starts it), Debian's Chromium driven by playwright-core, screenshots at the two widths the UI
 * is held to, and a small API client for setting up and checking state behind the browser's back.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import * as net from 'node:net';
import { join, resolve } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

const REPO = resolve(__dirname, '../../../..');
const BIN = join(REPO, 'packages/cli/bin/strongroom.js');
/** Debian's package; `npm test` installs it (scripts/test-deps.js). */
export const CHROMIUM = '/usr/bin/chromium';
export const SCREENSHOT_ROOT = join(REPO, 'test-output/ui-screenshots');
/** The ports the UI tests may use, so they never collide with other suites' servers. */
const PORT_RANGE = { first: 26300, last: 26399 };

export const WIDTHS = { desktop: { width: 1280, height: 800 }, phone: { width: 390, height: 844 } } as const;
export type WidthName = keyof typeof WIDTHS;

function portIsFree(port: number): Promise<boolean> {
  return new Promise((ok) => {
    const s = net.createServer();
    s.once('error', () => ok(false));
    s.listen(port, '127.0.0.1', () => s.close(() => ok(true)));
  });
}

async function freeUiPort(): Promise<number> {
  // Start at a random place so test files running side by side rarely try the same port.
  const span = PORT_RANGE.last - PORT_RANGE.first + 1;
  const start = Math.floor(Math.random() * span);
  for (let i = 0; i < span; i++) {
    const port = PORT_RANGE.first + ((start + i) % span);
    if (await portIsFree(port)) return port;
  }
  throw new Error(`no free port in ${PORT_RANGE.first}-${PORT_RANGE.last}`);
}

export interface UiServer {
  proc: ChildProcess;
  url: string;
  rootToken: string;
  /** A call to the API as root (or `token`), for setting up and checking what the browser did. */
  api<T = Record<string, unknown>>(method: string, path: string, body?: unknown, token?: string): Promise<{ status: number; body: T }>;
  stop(): Promise<void>;
}

/** A dev server on a free port of the UI range, ready once it answers as unsealed. */
export async function startUiServer(): Promise<UiServer> {
  const rootToken = 'root';
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freeUiPort();
    const proc = spawn(process.execPath, [BIN, 'server', '--dev', '--listen', `127.0.0.1:${port}`, '--dev-root-token', rootToken], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(VAULT|STRONGROOM)_/.test(k))),
    });
    let output = '';
    const exited = new Promise<number | null>((ok) => proc.once('exit', (code) => ok(code)));
    const ready = await new Promise<boolean>((ok, fail) => {
      const timer = setTimeout(() => fail(new Error(`dev server not ready after 90 s: ${output}`)), 90_000);
      const onData = (d: Buffer) => {
        output += d.toString();
        if (/Root Token: \S+/.test(output)) {
          clearTimeout(timer);
          ok(true);
        }
      };
      proc.stdout?.on('data', onData);
      proc.stderr?.on('data', onData);
      void exited.then((code) => {
        clearTimeout(timer);
        // Another process took the port between the check and the bind: try another one.
        if (/EADDRINUSE/.test(output)) ok(false);
        else fail(new Error(`dev server exited ${code}: ${output}`));
      });
    });
    if (!ready) continue;
    const url = `http://127.0.0.1:${port}`;
    return {
      proc, url, rootToken,
      async api<T>(method: string, path: string, body?: unknown, token = rootToken) {
        const res = await fetch(`${url}/v1/${path}`, {
          method,
          headers: { 'X-Vault-Token': token, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        });
        const text = await res.text();
        return { status: res.status, body: (text === '' ? {} : JSON.parse(text)) as T };
      },
      async stop() {
        if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGINT');
        const timer = setTimeout(() => proc.kill('SIGKILL'), 20_000);
        await exited;
        clearTimeout(timer);
      },
    };
  }
  throw new Error('dev server could not bind a port in the UI range');
}

export async function launchBrowser(): Promise<Browser> {
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    // Chromium's sandbox refuses to start as root, which is how CI runs.
    args: [...(isRoot ? ['--no-sandbox'] : []), '--disable-gpu', '--disable-dev-shm-usage'],
    timeout: 60_000,
  });
}

export interface UiPage {
  context: BrowserContext;
  page: Page;
  /**
   * Every script error and console error (CSP violations among them) the page reported; a test
   * expects none. Chromium's lines for non-2xx answers are left out: the API answers an empty
   * list with 404 and a refused call with 403, and the UI handles both.
   */
  problems: string[];
  close(): Promise<void>;
}

/** A fresh browser context (own sessionStorage) at one of the two widths. */
export async function openPage(browser: Browser, width: WidthName = 'desktop'): Promise<UiPage> {
  const context = await browser.newContext({ viewport: WIDTHS[width], deviceScaleFactor: 1 });
  context.setDefaultTimeout(30_000);
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('console', (m) => {
    if (m.type() !== 'error') return;
    // A refused API call (a 404 LIST of an empty folder, a 403) is the page's to show; the browser also logs it.
    if (m.text().startsWith('Failed to load resource: the server responded with a status of')) return;
    problems.push(`${m.text()} (${m.location().url})`);
  });
  page.on('pageerror', (e) => problems.push(e.message));
  return { context, page, problems, close: () => context.close() };
}

/** Saves `<test>/<name>-<width>.png` under the screenshot folder, for a reviewer to look at. */
export async function screenshot(page: Page, test: string, name: string): Promise<string> {
  const dir = join(SCREENSHOT_ROOT, test);
  mkdirSync(dir, { recursive: true });
  const width = page.viewportSize()?.width ?? 0;
  const file = join(dir, `${name}-${width}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}

/** Fails when the page is wider than the window: only a table may scroll sideways, in its frame. */
export async function expectNoSidewaysScroll(page: Page, what: string): Promise<void> {
  const { scroll, window } = await page.evaluate('({ scroll: document.documentElement.scrollWidth, window: window.innerWidth })') as { scroll: number; window: number };
  if (scroll > window) throw new Error(`${what} is ${scroll} px wide in a ${window} px window`);
}

/**
 * Takes the same screenshot at both widths by resizing the page (the layout must follow a
 * resize), checking at each that the page fits the width, then puts the size back.
 */
export async function screenshotBoth(page: Page, test: string, name: string): Promise<void> {
  const before = page.viewportSize() ?? WIDTHS.desktop;
  for (const size of Object.values(WIDTHS)) {
    await page.setViewportSize(size);
    await screenshot(page, test, name);
    await expectNoSidewaysScroll(page, `${test}/${name}`);
  }
  await page.setViewportSize(before);
}

/** Signs in through the form, past any pre-login modal, and waits for the signed-in frame. */
export async function signIn(page: Page, baseUrl: string, token: string, path = '/ui/'): Promise<void> {
  await page.goto(`${baseUrl}${path}`);
  await waitForSignInPage(page);
  await acknowledgeModals(page);
  await page.getByLabel('Token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await waitForSignedIn(page);
}

/** The sign-in page once its pre-login messages are in (so none can appear after this). */
export async function waitForSignInPage(page: Page): Promise<void> {
  await page.locator('main.sign-in[aria-busy="false"]').waitFor();
}

/** The signed-in frame once its post-login messages are in; a modal among them is left for the test. */
export async function waitForSignedIn(page: Page): Promise<void> {
  await page.locator('.shell[aria-busy="false"]').waitFor();
}

/** Acknowledges every modal custom message showing, one after another. */
export async function acknowledgeModals(page: Page): Promise<number> {
  let count = 0;
  // Bounded: a server holds at most 100 messages per namespace.
  for (; count < 100; count++) {
    const dialog = page.getByRole('dialog');
    if ((await dialog.count()) === 0) break;
    await dialog.getByRole('button', { name: 'Acknowledge' }).click();
  }
  return count;
}
