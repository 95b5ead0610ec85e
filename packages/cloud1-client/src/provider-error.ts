import { StrongroomError } from '@strongroom/core';

/**
 * A provider call failed. What the caller asked for was refused by the provider (a client
 * fault: bad policy, missing entity, access denied) is a 400 the caller can act on; the
 * provider failing or being unreachable (a server fault, throttling, no answer) is a 502, which
 * clients treat as worth retrying.
 */
export class ProviderError extends StrongroomError {
  /** The provider's error code (`NoSuchEntity`, `Throttling`...), or '' when it never answered. */
  readonly providerCode: string;

  constructor(action: string, cause: unknown) {
    const upstream = isUpstreamFault(cause);
    super(upstream ? 'provider_unavailable' : 'provider_refused', upstream ? 502 : 400, `${action} failed: ${describe(cause)}`, { cause });
    this.providerCode = (cause as { $metadata?: unknown; name?: string } | null)?.$metadata ? (cause as { name?: string }).name ?? '' : '';
  }
}

function isUpstreamFault(err: unknown): boolean {
  const e = err as { $fault?: string; $metadata?: { httpStatusCode?: number }; $retryable?: { throttling?: boolean } } | null;
  if (!e || typeof e !== 'object' || !e.$metadata) return true;
  return e.$fault === 'server' || e.$retryable?.throttling === true || (e.$metadata.httpStatusCode ?? 0) >= 500;
}

function describe(err: unknown): string {
  if (err && typeof err === 'object') {
    const e = err as { name?: string; message?: string };
    return e.name && e.message ? `${e.name}: ${e.message}` : String(e.message ?? e.name ?? err);
  }
  return String(err);
}
