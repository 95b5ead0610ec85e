import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startDevServer, type DevServer } from './cli-runner';

/** What the tests of one describe block share. */
export interface DevServerFixture {
  dev: DevServer;
  /** The server's address and root token, as the command under test reads them. */
  env: Record<string, string>;
  /** A scratch directory for files the commands read or write. */
  dir: string;
}

/**
 * One dev server for the enclosing describe block: started before its tests, stopped after them
 * with the scratch directory removed. The fields are set in beforeAll, so only tests and hooks
 * may read them, never the describe body itself.
 */
export function useDevServer(): DevServerFixture {
  const fixture = {} as DevServerFixture;
  beforeAll(async () => {
    fixture.dev = await startDevServer();
    fixture.env = { VAULT_ADDR: fixture.dev.address, VAULT_TOKEN: fixture.dev.rootToken };
    fixture.dir = mkdtempSync(join(tmpdir(), 'strongroom-cli-'));
  }, 90_000);
  afterAll(async () => {
    await fixture.dev?.stop();
    if (fixture.dir !== undefined) rmSync(fixture.dir, { recursive: true, force: true });
  });
  return fixture;
}
