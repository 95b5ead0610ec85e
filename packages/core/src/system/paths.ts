import type { Core } from '../core';
import type { PathDefinition } from '../framework/types';
import { capabilityPaths } from './path-capabilities';
import { mountPaths } from './path-mounts';
import { policyPaths } from './path-policies';
import { sealPaths } from './path-seal';
import { wrappingPaths } from './path-wrapping';
import { leasePaths } from './path-leases';
import { namespacePaths } from './path-namespaces';
import { auditPaths } from './path-audit';
import { pluginPaths } from './path-plugins';
import { customMessagePaths } from './path-custom-messages';
import { generateRootPaths } from './path-generate-root';

/** The `sys/` backend's path table, in match order. */
export function systemPaths(core: Core): PathDefinition[] {
  return [...sealPaths(core), ...mountPaths(core), ...policyPaths(core), ...capabilityPaths(core), ...wrappingPaths(core), ...leasePaths(core), ...namespacePaths(core), ...auditPaths(() => core.audit), ...pluginPaths(core), ...customMessagePaths(core), ...generateRootPaths(core)];
}
