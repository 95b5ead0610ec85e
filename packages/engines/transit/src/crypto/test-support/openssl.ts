import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Runs the system openssl binary as an outside oracle: it shares no code with what it checks
 * (node bundles its own OpenSSL build; this is the distribution's), so agreement means the
 * formats match what other tooling produces, not only that our code agrees with itself.
 */
export class OpensslScratch {
  readonly dir = mkdtempSync(join(tmpdir(), 'strongroom-transit-crypto-'));

  path(name: string): string {
    return join(this.dir, name);
  }

  write(name: string, data: Buffer | string): string {
    const p = this.path(name);
    writeFileSync(p, data);
    return p;
  }

  read(name: string): Buffer {
    return readFileSync(this.path(name));
  }

  /** Runs openssl and returns stdout; throws with stderr attached when it exits non-zero. */
  run(args: string[], input?: Buffer): Buffer {
    try {
      return execFileSync('openssl', args, { cwd: this.dir, input, stdio: ['pipe', 'pipe', 'pipe'] });
    } catch (err) {
      const e = err as { stderr?: Buffer; stdout?: Buffer; message: string };
      throw new Error(`openssl ${args.join(' ')} failed: ${e.stderr?.toString() ?? ''}${e.stdout?.toString() ?? ''}${e.message}`);
    }
  }

  /** True when openssl exits 0 (verification commands report failure through the exit status). */
  succeeds(args: string[]): boolean {
    try {
      execFileSync('openssl', args, { cwd: this.dir, stdio: ['ignore', 'pipe', 'pipe'] });
      return true;
    } catch {
      return false;
    }
  }

  cleanup(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}
