import { Cloud1Emulator } from './emulator';
import type { Cloud1Endpoints, Credentials } from './admin';

let accountSeq = 0;

/**
 * A 12-digit account ID unique within the run: Jest runs suites in parallel workers, each
 * with its own emulator, but IDs also name things in failure messages, so keep them distinct.
 */
export function nextAccountId(): string {
  accountSeq += 1;
  return String(100000000000 + (process.pid % 100000) * 1000 + accountSeq).slice(-12);
}

/**
 * One emulator per test suite on 127.0.0.1 and a fresh account per test: the common part of
 * the engines' test kits, which add their own backend configuration on top.
 */
export class Cloud1EmulatorFixture {
  readonly emulator = new Cloud1Emulator();
  endpoints!: Cloud1Endpoints;

  async start(): Promise<this> {
    this.endpoints = await this.emulator.start({ listen: '127.0.0.1:0' });
    return this;
  }

  stop(): Promise<void> {
    return this.emulator.stop();
  }

  /** A new account and its root keys. */
  newAccount(): { accountId: string; root: Credentials } {
    const { accountId } = this.emulator.createAccount({ id: nextAccountId() });
    return { accountId, root: this.emulator.issueRootCredentials(accountId) };
  }
}
