import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import express from 'express';
import type { Core, Logger } from '@strongroom/core';
import type { ClusterRouting } from '@strongroom/cluster';
import { createDispatcher, type DispatcherMetrics } from './dispatcher';
import type { JsonLimits } from './http/json-body';
import { defaultUiDir, mountWebUi } from './http/web-ui';

export interface AppOptions {
  maxRequestSize: number;
  jsonLimits?: JsonLimits;
  logger: Logger;
  cluster?: ClusterRouting;
  metrics?: DispatcherMetrics;
  /** The built web UI; null serves none (a clear 503 under /ui/). Defaults to the ui package's build. */
  uiDir?: string | null;
}

/**
 * The HTTP layer is an Express app. The API itself (`/v1/*`) is one dispatcher into the core's
 * path tables; requests for it go straight to the dispatcher from the server's request listener,
 * because Express's per-request setup (prototype swaps, router walk, query parsing) costs most
 * of the request budget the API is held to. Everything outside `/v1` goes through Express.
 */
export function createApp(core: Core, options: AppOptions): { app: express.Express; listener: RequestListener } {
  const dispatch = createDispatcher(core, options);
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.use('/v1', (req, res) => {
    req.url = req.originalUrl;
    void dispatch(req, res);
  });
  mountWebUi(app, options.uiDir === undefined ? defaultUiDir() : options.uiDir);
  app.use((_req, res) => {
    res.status(404).json({ errors: ['not found; the API is served under /v1/ and the web UI under /ui/'] });
  });

  const listener: RequestListener = (req: IncomingMessage, res: ServerResponse) => {
    if (req.url !== undefined && req.url.startsWith('/v1/')) void dispatch(req, res);
    else app(req, res);
  };
  return { app, listener };
}
