import type { CoreReply } from './core';
import { NotFoundError } from './errors';
import type { AuthResult, BackendRequest, BackendResponse } from './framework/types';

function authWire(auth: AuthResult) {
  return {
    client_token: auth.clientToken,
    accessor: auth.accessor,
    policies: auth.policies,
    token_policies: auth.tokenPolicies,
    metadata: auth.metadata,
    lease_duration: auth.leaseDuration,
    renewable: auth.renewable,
    entity_id: auth.entityId,
    token_type: auth.tokenType,
    orphan: auth.orphan,
    mfa_requirement: null,
    num_uses: auth.numUses,
  };
}

/**
 * Turns a backend's answer into Vault's wire reply: the envelope, 204 for a write with nothing
 * to say, 404 for a read of nothing or a list with no keys.
 */
export interface LeaseInfo {
  leaseId: string;
  renewable: boolean;
  /** Seconds left. */
  duration: number;
}

export function buildEnvelope(req: BackendRequest, resp: BackendResponse | null, mountType: string, lease?: LeaseInfo): CoreReply {
  if (resp?.raw) return { status: resp.raw.status, body: resp.raw.body };
  const empty = !resp || (resp.data == null && !resp.auth && !(resp.warnings && resp.warnings.length > 0));
  if (empty) {
    if (req.operation === 'read' || req.operation === 'list') throw new NotFoundError();
    return { status: resp?.status ?? 204, body: null };
  }
  if (req.operation === 'list' && !resp.status) {
    const keys = resp.data?.['keys'];
    if (!Array.isArray(keys) || keys.length === 0) throw new NotFoundError();
  }
  const body: Record<string, unknown> = {
    request_id: req.id,
    lease_id: lease?.leaseId ?? '',
    renewable: lease?.renewable ?? false,
    lease_duration: lease?.duration ?? 0,
    data: resp.data ?? null,
    wrap_info: null,
    warnings: resp.warnings && resp.warnings.length > 0 ? resp.warnings : null,
    auth: resp.auth ? authWire(resp.auth) : null,
    mount_type: mountType,
  };
  if (resp.copyDataToTop && resp.data) {
    for (const [k, v] of Object.entries(resp.data)) if (!(k in body)) body[k] = v;
  }
  return { status: resp.status ?? 200, body };
}
