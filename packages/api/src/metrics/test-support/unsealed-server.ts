import { initAndUnseal, startTestServer, type TestServer } from '../../test-support/servers';

/** A test server, initialized and unsealed, and its root token. */
export interface UnsealedServer {
  server: TestServer;
  url: string;
  root: string;
}

/**
 * One unsealed server for the enclosing describe block, stopped after its tests. The fields are
 * set in beforeAll, so only tests and hooks may read them, never the describe body itself.
 */
export function useUnsealedServer(): UnsealedServer {
  const fixture = {} as UnsealedServer;
  beforeAll(async () => {
    fixture.server = await startTestServer();
    fixture.url = fixture.server.url;
    fixture.root = await initAndUnseal(fixture.server);
  }, 60_000);
  afterAll(async () => {
    await fixture.server?.stop();
  });
  return fixture;
}
