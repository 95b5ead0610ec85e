import { fork, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import type { CutMode } from '../../../../raft/src/test-support/link-proxy';

/**
 * LinkProxy instances run in a child process rather than in the test's own.
 *
 * Why: with LinkProxy in the Jest process, the chaos test sometimes left Jest spinning at 100%
 * CPU after every test had passed, forever, inside node::Environment::CleanupHandles at exit,
 * with one TCP handle that was referenced, not active and never closed (see the report on
 * LinkProxy's resets). In a child, such a leak is contained: the child is SIGKILLed if it does
 * not exit by itself, and `close` says whether it did. A child also keeps the proxies' socket
 * work off the event loop that times the clients' requests.
 */
export class RemoteLinkProxies {
  private next = 0;
  private readonly pending = new Map<number, { ok: (v: Record<string, unknown>) => void; fail: (e: Error) => void }>();
  readonly addresses: string[] = [];

  private constructor(private readonly child: ChildProcess) {
    child.on('message', (m: { id: number; error?: string } & Record<string, unknown>) => {
      const waiter = this.pending.get(m.id);
      if (!waiter) return;
      this.pending.delete(m.id);
      if (m.error !== undefined) waiter.fail(new Error(m.error));
      else waiter.ok(m);
    });
    child.on('exit', () => {
      for (const w of this.pending.values()) w.fail(new Error('the link proxy process exited'));
      this.pending.clear();
    });
  }

  /**
   * Starts one proxy per target (host:port), in order; `addresses[i]` stands for `targets[i]`.
   * `delayMs` adds that much latency each way on every one.
   */
  static async start(targets: string[], options: { delayMs?: number } = {}): Promise<RemoteLinkProxies> {
    const child = fork(resolve(__dirname, 'link-proxy-host.ts'), [], {
      execArgv: ['-r', require.resolve('sucrase/register/ts')],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const proxies = new RemoteLinkProxies(child);
    try {
      for (const target of targets) proxies.addresses.push((await proxies.send({ op: 'start', target, ...options }))['address'] as string);
    } catch (err) {
      child.kill('SIGKILL');
      throw err;
    }
    return proxies;
  }

  async cut(index: number, mode: CutMode): Promise<void> {
    await this.send({ op: 'cut', index, mode });
  }

  async heal(index: number): Promise<void> {
    await this.send({ op: 'heal', index });
  }

  async healAll(): Promise<void> {
    for (let i = 0; i < this.addresses.length; i++) await this.heal(i);
  }

  /**
   * Closes every proxy and waits for the process to exit by itself; SIGKILLs it after
   * `graceMs`. Resolves with whether it exited by itself.
   */
  async close(graceMs = 3_000): Promise<{ exitedByItself: boolean }> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return { exitedByItself: this.child.signalCode === null };
    const exited = new Promise<void>((r) => this.child.once('exit', () => r()));
    await this.send({ op: 'close' }).catch(() => undefined);
    const timer = new Promise<'late'>((r) => setTimeout(() => r('late'), graceMs));
    const late = (await Promise.race([exited, timer])) === 'late';
    if (late) {
      this.child.kill('SIGKILL');
      await exited;
    }
    return { exitedByItself: !late };
  }

  /** For afterAll: never leaves the process behind, whatever state it is in. */
  kill(): void {
    this.child.kill('SIGKILL');
  }

  private send(command: Record<string, unknown>): Promise<Record<string, unknown>> {
    const id = this.next++;
    return new Promise((ok, fail) => {
      this.pending.set(id, { ok, fail });
      this.child.send({ id, ...command }, (err) => {
        if (err) {
          this.pending.delete(id);
          fail(err);
        }
      });
    });
  }
}
