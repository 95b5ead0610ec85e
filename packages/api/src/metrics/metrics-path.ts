import { definePath, type CoreExtension } from '@strongroom/core';
import type { Registry } from 'prom-client';
import { renderMetrics } from './render';

/**
 * `sys/metrics` behind the ACL (read on `sys/metrics`), from the root namespace only, as Vault
 * serves it. A listener with `unauthenticated_metrics_access` answers it before the core.
 */
export function metricsExtension(registry: Registry): CoreExtension {
  return {
    systemPaths: [
      definePath({
        pattern: 'metrics',
        restricted: true,
        fields: { format: { type: 'string', default: '', description: '"prometheus" for the text exposition format; JSON when left out' } },
        operations: {
          read: async (_req, fields) => ({ raw: await renderMetrics(registry, fields.string('format')) }),
        },
        help: 'The server\'s metrics, in Prometheus text or JSON.',
      }),
    ],
  };
}
