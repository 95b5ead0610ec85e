import * as net from 'node:net';

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|\[::1\]|localhost|::ffff:127\.\d+\.\d+\.\d+)$/i;

/**
 * Refuses, inside this process, every TCP connection to anything but loopback: a fuzzer that
 * writes endpoints and regions into engine configurations must not make the server dial out,
 * whatever value got through. A refused attempt fails like a closed port and is recorded.
 */
export function guardEgress(): { blocked: string[]; release(): void } {
  const blocked: string[] = [];
  const original = net.Socket.prototype.connect;
  // The overloads of connect() are collapsed to the one question asked here: which host.
  const patched = function (this: net.Socket, ...args: unknown[]) {
    // net.createConnection() hands connect() its arguments already normalized, as one array.
    const first = Array.isArray(args[0]) ? (args[0] as unknown[])[0] : args[0];
    let host: string | undefined;
    if (first && typeof first === 'object') {
      const o = first as { host?: string; path?: string | null };
      // A non-empty `path` is a local socket; HTTP clients pass null there.
      host = typeof o.path === 'string' && o.path !== '' ? undefined : o.host ?? 'localhost';
    } else if (typeof first === 'number' || (typeof first === 'string' && /^\d+$/.test(first))) {
      host = typeof args[1] === 'string' ? args[1] : 'localhost';
    }
    if (host !== undefined && !LOOPBACK.test(host)) {
      blocked.push(host);
      const err = Object.assign(new Error(`connection to ${host} refused by the test's egress guard`), { code: 'ECONNREFUSED' });
      process.nextTick(() => this.destroy(err));
      return this;
    }
    return (original as (...a: unknown[]) => net.Socket).apply(this, args);
  };
  net.Socket.prototype.connect = patched as typeof original;
  return {
    blocked,
    release: () => {
      net.Socket.prototype.connect = original;
    },
  };
}
