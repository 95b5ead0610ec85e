import { Backend, type BackendRequest, type EngineContext, type EngineFactory, type LoginRenewal, type LoginRenewRequest } from '@strongroom/core';
import type { Cloud1AuthOptions, Cloud1Context } from './context';
import { accessListPaths } from './path-access-list';
import { configCertificatePaths } from './path-config-certificate';
import { configClientPaths } from './path-config-client';
import { configIdentityPaths } from './path-config-identity';
import { configRotateRootPaths } from './path-config-rotate-root';
import { configStsPaths } from './path-config-sts';
import { configTidyPaths } from './path-config-tidy';
import { denyListPaths } from './path-deny-list';
import { loginPaths } from './path-login';
import { rolePaths } from './path-role';
import { roleTagPaths } from './path-role-tag';
import { Tidier, tidyPaths } from './path-tidy';
import { Provider } from './provider';
import { KEYS } from './storage-keys';
import { renewLogin } from './renew';

/** One cloud1 auth mount: its path table, its tidy schedule and its renewal checks. */
export class Cloud1AuthBackend extends Backend {
  readonly context: Cloud1Context;
  private readonly tidier: Tidier;
  /** Every VM login writes its instance's access list entry: a performance secondary keeps its own and logs in there. */
  override readonly localStorage = [KEYS.accessListPrefix];

  constructor(ctx: EngineContext, options: Cloud1AuthOptions = {}) {
    const context = { clock: ctx.clock, logger: ctx.logger, options } as Cloud1Context;
    context.provider = new Provider(context);
    const tidier = new Tidier(context);
    super('cloud1', [
      ...configClientPaths(context), ...configRotateRootPaths(context), ...configIdentityPaths(context),
      ...configCertificatePaths(context), ...configStsPaths(context), ...configTidyPaths(context),
      ...rolePaths(context), ...roleTagPaths(context), ...loginPaths(context),
      ...accessListPaths(context), ...denyListPaths(context), ...tidyPaths(context, tidier),
    ]);
    this.context = context;
    this.tidier = tidier;
  }

  /** Core's background tick on the active node: the hourly tidy of both lists. */
  override async periodic(req: BackendRequest): Promise<void> {
    await this.tidier.periodic(req.storage, req.mount.uuid);
  }

  override renewLogin(req: BackendRequest, token: LoginRenewRequest): Promise<LoginRenewal | null> {
    return renewLogin(this.context, req, token);
  }
}

export function createCloud1AuthBackend(ctx: EngineContext, options: Cloud1AuthOptions = {}): Cloud1AuthBackend {
  return new Cloud1AuthBackend(ctx, options);
}

/** The auth method `cloud1`, enabled with `sys/auth/cloud1 type=cloud1`. */
export const cloud1AuthEngine: EngineFactory = {
  type: 'cloud1',
  kind: 'auth',
  create: (ctx) => createCloud1AuthBackend(ctx),
};

/** The same engine with deployment or test options (a test points regional STS at an emulator). */
export function cloud1AuthEngineWith(options: Cloud1AuthOptions): EngineFactory {
  return { type: 'cloud1', kind: 'auth', create: (ctx) => createCloud1AuthBackend(ctx, options) };
}
