import { existsSync, readFile } from 'node:fs';
import { dirname, join } from 'node:path';
import express from 'express';

/** Where the app is mounted, as in Vault, so bookmarks and docs carry over. */
export const UI_PREFIX = '/ui';

/**
 * The app's own script and style only: no inline code, no other origin, never framed. The API
 * is same-origin, so `connect-src 'self'` is all it needs.
 */
export const UI_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "font-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const YEAR_IMMUTABLE = 'public, max-age=31536000, immutable';

function setSecurityHeaders(res: express.Response): void {
  res.setHeader('Content-Security-Policy', UI_CSP);
  res.setHeader('X-Frame-Options', 'DENY');
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Referrer-Policy', 'no-referrer');
}

/** The built app of `@strongroom/ui`, or null when that package is not installed. */
export function defaultUiDir(): string | null {
  try {
    return join(dirname(require.resolve('@strongroom/ui/package.json')), 'dist');
  } catch {
    return null;
  }
}

function jsonError(res: express.Response, status: number, message: string): void {
  res.status(status).setHeader('Cache-Control', 'no-store');
  res.json({ errors: [message] });
}

/**
 * Serves the built single-page app under `/ui/`: hashed files under `assets/` cached for a year,
 * everything else answered with `index.html` (never cached, so a new build is picked up) for the
 * app's router to handle. Whether the app is built is checked per request, so a server started
 * before a build still serves it afterwards, and one without it still serves the API.
 */
export function webUi(uiDir: string | null): express.Router {
  const router = express.Router({ caseSensitive: true, strict: true });
  const index = uiDir === null ? null : join(uiDir, 'index.html');
  const assets = uiDir === null ? null : express.static(join(uiDir, 'assets'), {
    index: false,
    redirect: false,
    fallthrough: true,
    etag: false,
    lastModified: false,
    setHeaders: (res) => {
      setSecurityHeaders(res as unknown as express.Response);
      res.setHeader('Cache-Control', YEAR_IMMUTABLE);
    },
  });

  router.use((req, res, next) => {
    setSecurityHeaders(res);
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('Allow', 'GET, HEAD');
      jsonError(res, 405, `method ${req.method} is not allowed on the web UI; the API is served under /v1/`);
      return;
    }
    if (index === null || !existsSync(index)) {
      jsonError(res, 503, 'the web UI is not built on this server: build the ui package (npm run build) and reload; the API is served under /v1/');
      return;
    }
    next();
  });
  router.get('/', (req, res, next) => {
    // `/ui` without the slash would resolve the app's relative URLs against `/`.
    if (req.originalUrl.split('?')[0] === UI_PREFIX) res.redirect(301, `${UI_PREFIX}/`);
    else next();
  });
  if (assets) {
    router.use('/assets', assets, (_req, res) => {
      // A missing hashed file must not get index.html: the browser would run HTML as script.
      jsonError(res, 404, 'no such file in the web UI\'s assets');
    });
  }
  router.use((_req, res) => {
    readFile(index as string, (err, html) => {
      if (err) {
        jsonError(res, 503, 'the web UI could not be read on this server');
        return;
      }
      res.setHeader('Cache-Control', 'no-cache');
      res.type('html').send(html);
    });
  });
  return router;
}

/** The UI under `/ui/` and `/` sending browsers there. */
export function mountWebUi(app: express.Express, uiDir: string | null): void {
  app.use(UI_PREFIX, webUi(uiDir));
  app.get('/', (_req, res) => {
    setSecurityHeaders(res);
    res.redirect(302, `${UI_PREFIX}/`);
  });
}
