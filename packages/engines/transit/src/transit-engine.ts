import { Backend, type BackendRequest, type EngineContext, type EngineFactory, type LogicalStorage } from '@strongroom/core';
import type { KeyPolicy } from './key-policy';
import { KeyStore } from './key-store';
import { backupPaths } from './path-backup';
import { byokPaths } from './path-byok';
import { cacheConfigPaths } from './path-cache-config';
import { certificatePaths } from './path-certificates';
import { configKeysPaths } from './path-config-keys';
import { datakeyPaths } from './path-datakey';
import { decryptPaths } from './path-decrypt';
import { encryptPaths } from './path-encrypt';
import { exportPaths } from './path-export';
import { hashPaths } from './path-hash';
import { hmacPaths } from './path-hmac';
import { importPaths } from './path-import';
import { keysPaths } from './path-keys';
import { keysConfigPaths } from './path-keys-config';
import { randomPaths } from './path-random';
import { rewrapPaths } from './path-rewrap';
import { rotatePaths, rotatedCopy, rotationRefusal } from './path-rotate';
import { signPaths } from './path-sign';
import { trimPaths } from './path-trim';
import type { TransitContext } from './transit-context';

function rotationDue(policy: KeyPolicy, now: number): boolean {
  if (policy.autoRotatePeriod <= 0 || rotationRefusal(policy) !== null) return false;
  const latest = policy.version(policy.latestVersion);
  return latest !== undefined && latest.createdAt + policy.autoRotatePeriod * 1000 <= now;
}

/** One transit mount: its path table, and the key store (with its cache) the paths share. */
export class TransitBackend extends Backend {
  readonly context: TransitContext;

  constructor(ctx: EngineContext) {
    const context: TransitContext = { clock: ctx.clock, logger: ctx.logger, keys: new KeyStore() };
    super('transit', [
      ...keysPaths(context), ...keysConfigPaths(context), ...rotatePaths(context), ...trimPaths(context),
      ...configKeysPaths(context), ...cacheConfigPaths(context),
      ...encryptPaths(context), ...decryptPaths(context), ...rewrapPaths(context), ...datakeyPaths(context),
      ...signPaths(context), ...hmacPaths(context), ...hashPaths(), ...randomPaths(),
      ...importPaths(context), ...exportPaths(context), ...byokPaths(context), ...backupPaths(context), ...certificatePaths(context),
    ]);
    this.context = context;
  }

  /** Core's background tick on the active node: rotate the keys that are due. */
  override async periodic(req: BackendRequest): Promise<void> {
    await this.rotateDueKeys(req.storage);
  }

  /**
   * Rotates every key whose auto_rotate_period has passed since its latest version was made.
   * For the active node's scheduler, which owns the mount's storage view; answers the names
   * rotated. A key that fails is logged and the others still rotate.
   */
  async rotateDueKeys(storage: LogicalStorage): Promise<string[]> {
    const { keys, clock, logger } = this.context;
    const rotated: string[] = [];
    for (const name of await keys.list(storage)) {
      try {
        const policy = await keys.get(storage, name);
        if (!policy || !rotationDue(policy, clock.now())) continue;
        const done = await keys.update(storage, name, async (current) => {
          if (!current || !rotationDue(current, clock.now())) return { change: null, result: false };
          return { change: { next: await rotatedCopy(current, clock.now()) }, result: true };
        });
        if (done) rotated.push(name);
      } catch (err) {
        logger.error('transit automatic key rotation failed', { key: name, error: String(err) });
      }
    }
    return rotated;
  }
}

export function createTransitBackend(ctx: EngineContext): TransitBackend {
  return new TransitBackend(ctx);
}

export const transitEngine: EngineFactory = {
  type: 'transit',
  kind: 'secret',
  create: createTransitBackend,
};
