/**
 * A reply body that is text of its own content type rather than JSON (the Prometheus exposition
 * format). Backends in this package return it as a raw body; the dispatcher writes it as is.
 */
export class TextReply {
  constructor(readonly contentType: string, readonly text: string) {}
}
