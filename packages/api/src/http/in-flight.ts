import type { ServerResponse } from 'node:http';

/**
 * A listener's responses that have not closed yet, so that a graceful close can wait for them.
 * Only their number is kept. A Set of them, living in the old generation and churned by every
 * request, leaves its outgrown tables behind there still pointing at responses, and V8's
 * young-generation GC takes those pointers as live: every request's objects were copied into
 * the old generation and waited there for a full GC.
 */
export class InFlight {
  private open = 0;

  get size(): number {
    return this.open;
  }

  track(res: ServerResponse): void {
    this.open++;
    res.once('close', () => {
      this.open--;
    });
  }
}
