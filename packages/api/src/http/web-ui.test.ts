import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Server } from 'node:http';
import express from 'express';
import { mountWebUi, UI_CSP } from './web-ui';

const INDEX = '<!doctype html><title>app</title><script type="module" src="/ui/assets/index-AbC123.js"></script>';

async function serve(uiDir: string | null): Promise<{ url: string; close(): Promise<void> }> {
  const app = express();
  mountWebUi(app, uiDir);
  const server: Server = await new Promise((ok) => { const s = app.listen(0, '127.0.0.1', () => ok(s)); });
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise((ok) => server.close(() => ok())) };
}

function get(url: string, method = 'GET') {
  return fetch(url, { method, redirect: 'manual' });
}

describe('the web UI under /ui/', () => {
  let dir: string;
  let ui: Awaited<ReturnType<typeof serve>>;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'strongroom-ui-'));
    mkdirSync(join(dir, 'assets'));
    writeFileSync(join(dir, 'index.html'), INDEX);
    writeFileSync(join(dir, 'assets', 'index-AbC123.js'), 'console.log(1)');
    writeFileSync(join(dir, 'assets', 'index-XyZ789.css'), 'body{}');
    ui = await serve(dir);
  });
  afterAll(async () => {
    await ui.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('sends / to /ui/', async () => {
    const res = await get(`${ui.url}/`);
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe('/ui/');
  });

  it('sends /ui to /ui/, so the app resolves its URLs under it', async () => {
    const res = await get(`${ui.url}/ui`);
    expect(res.status).toBe(301);
    expect(res.headers.get('location')).toBe('/ui/');
  });

  it('serves index.html uncached, with a CSP that allows no inline code and no framing', async () => {
    const res = await get(`${ui.url}/ui/`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await res.text()).toBe(INDEX);
    expect(res.headers.get('cache-control')).toBe('no-cache');
    const csp = res.headers.get('content-security-policy') ?? '';
    expect(csp).toBe(UI_CSP);
    expect(csp).toContain("default-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("style-src 'self'");
    expect(csp).not.toContain('unsafe-inline');
    expect(csp).not.toContain('unsafe-eval');
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
  });

  it('answers the app\'s own paths with index.html, for its router (a reload or a shared link)', async () => {
    for (const path of ['/ui/secrets/kv/folder/a', '/ui/messages', '/ui/dashboard?x=1']) {
      const res = await get(`${ui.url}${path}`);
      expect(res.status).toBe(200);
      expect(await res.text()).toBe(INDEX);
      expect(res.headers.get('cache-control')).toBe('no-cache');
    }
  });

  it('caches hashed assets for a year as immutable, with the right type and the same headers', async () => {
    const js = await get(`${ui.url}/ui/assets/index-AbC123.js`);
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toMatch(/javascript/);
    expect(js.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(js.headers.get('x-frame-options')).toBe('DENY');
    expect(js.headers.get('content-security-policy')).toBe(UI_CSP);
    const css = await get(`${ui.url}/ui/assets/index-XyZ789.css`);
    expect(css.headers.get('content-type')).toMatch(/text\/css/);
    expect(css.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
  });

  it('answers a missing asset with 404, not with index.html the browser would run as script', async () => {
    const res = await get(`${ui.url}/ui/assets/index-Gone00.js`);
    expect(res.status).toBe(404);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(await res.json()).toEqual({ errors: [expect.stringContaining('assets')] });
  });

  it('does not serve files outside the build', async () => {
    const res = await get(`${ui.url}/ui/assets/..%2F..%2Fetc%2Fpasswd`);
    expect([400, 403, 404]).toContain(res.status);
    expect(await res.text()).not.toContain('root:');
  });

  it('refuses writes with 405 and the API\'s error shape', async () => {
    const res = await get(`${ui.url}/ui/messages`, 'POST');
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, HEAD');
    expect(await res.json()).toEqual({ errors: [expect.stringContaining('not allowed on the web UI')] });
  });
});

describe('a server whose web UI is not built', () => {
  it('answers /ui/ with a 503 that says so, and still redirects /', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'strongroom-ui-empty-'));
    for (const uiDir of [null, empty]) {
      const ui = await serve(uiDir);
      try {
        const res = await get(`${ui.url}/ui/secrets`);
        expect(res.status).toBe(503);
        expect(res.headers.get('x-frame-options')).toBe('DENY');
        expect(await res.json()).toEqual({ errors: [expect.stringContaining('the web UI is not built')] });
        expect((await get(`${ui.url}/`)).headers.get('location')).toBe('/ui/');
      } finally {
        await ui.close();
      }
    }
    rmSync(empty, { recursive: true, force: true });
  });
});
