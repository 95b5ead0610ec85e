import { Backend, KeyedMutex, type BackendRequest, type EngineContext, type EngineFactory } from '@strongroom/core';
import type { Cloud1SecretsContext, Cloud1SecretsOptions } from './context';
import { ACCESS_KEYS_SECRET, accessKeysSecret, rollbackStaleUsers } from './iam-user';
import { configLeasePaths } from './path-config-lease';
import { configRootPaths } from './path-config-root';
import { configRotateRootPaths } from './path-config-rotate-root';
import { credsPaths } from './path-creds';
import { rolesPaths } from './path-roles';
import { staticCredsPaths } from './path-static-creds';
import { staticRolesPaths } from './path-static-roles';
import { Provider } from './provider';
import { rotateDueStaticRoles } from './static-rotation';
import { STS_SECRET, stsSecret } from './sts-credentials';

/** One cloud1 secrets mount: its path table, its lease types and its background work. */
export class Cloud1SecretsBackend extends Backend {
  readonly context: Cloud1SecretsContext;

  constructor(ctx: EngineContext, options: Cloud1SecretsOptions = {}) {
    const context: Cloud1SecretsContext = {
      clock: ctx.clock, logger: ctx.logger, options, provider: new Provider(options), locks: new KeyedMutex(),
    };
    super(
      'cloud1',
      [
        ...configRootPaths(context), ...configRotateRootPaths(context), ...configLeasePaths(),
        ...rolesPaths(context), ...credsPaths(context), ...staticRolesPaths(context), ...staticCredsPaths(),
      ],
      { [ACCESS_KEYS_SECRET]: accessKeysSecret(context), [STS_SECRET]: stsSecret },
    );
    this.context = context;
  }

  /**
   * Core's background tick, on the active node only: rotate the static roles that are due and
   * undo IAM user creations that died half-way. Both work from storage alone.
   */
  override async periodic(req: BackendRequest): Promise<void> {
    await rotateDueStaticRoles(this.context, req.storage);
    await rollbackStaleUsers(this.context, req.storage);
  }
}

export function createCloud1SecretsBackend(ctx: EngineContext, options: Cloud1SecretsOptions = {}): Cloud1SecretsBackend {
  return new Cloud1SecretsBackend(ctx, options);
}

/** The secrets engine `cloud1`, enabled with `sys/mounts/cloud1 type=cloud1`. */
export const cloud1SecretsEngine: EngineFactory = {
  type: 'cloud1',
  kind: 'secret',
  create: (ctx) => createCloud1SecretsBackend(ctx),
};

/** The same engine with deployment or test options (a test gives it an empty environment). */
export function cloud1SecretsEngineWith(options: Cloud1SecretsOptions): EngineFactory {
  return { type: 'cloud1', kind: 'secret', create: (ctx) => createCloud1SecretsBackend(ctx, options) };
}
