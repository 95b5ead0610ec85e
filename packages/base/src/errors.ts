/**
 * Every failure a caller can act on is one of these classes. Each has a stable `code`, the HTTP
 * status the API layer answers with, and optionally the underlying `cause`. The API maps them to
 * Vault's `{"errors": [...]}` body in one place; nothing else picks status codes. The kinds that
 * only the secrets server knows of live in its core; lower layers (Raft) derive from this one.
 */
export class StrongroomError extends Error {
  readonly code: string;
  readonly status: number;
  /** Extra lines for the `errors` array after the message (Vault sometimes returns several). */
  readonly details: readonly string[];

  constructor(code: string, status: number, message: string, options?: { cause?: unknown; details?: readonly string[] }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.status = status;
    this.details = options?.details ?? [];
  }
}
