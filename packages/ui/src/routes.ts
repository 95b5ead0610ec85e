import type { PageRoute } from './page';
import { dashboardRoutes } from './pages/dashboard';
import { messagesRoutes } from './pages/messages';
import { secretsRoutes } from './pages/secrets';

/** Every page, first match wins. A page adds itself by exporting its routes and being listed here. */
export const routes: PageRoute[] = [
  ...dashboardRoutes,
  ...secretsRoutes,
  ...messagesRoutes,
];
