import { LinkProxy, type CutMode } from '../../../../raft/src/test-support/link-proxy';

/**
 * The child-process side of RemoteLinkProxies (see remote-link-proxies.ts): hosts LinkProxy
 * instances and obeys commands from the parent over IPC. Run with sucrase's TypeScript hook.
 */

type Command =
  | { id: number; op: 'start'; target: string; delayMs?: number }
  | { id: number; op: 'cut'; index: number; mode: CutMode }
  | { id: number; op: 'heal'; index: number }
  | { id: number; op: 'close' };

const proxies: LinkProxy[] = [];

process.on('message', (message: Command) => {
  void (async () => {
    try {
      switch (message.op) {
        case 'start': {
          const proxy = await LinkProxy.start({ target: message.target, ...(message.delayMs ? { delayMs: message.delayMs } : {}) });
          proxies.push(proxy);
          return reply(message.id, { address: proxy.address });
        }
        case 'cut':
          proxyAt(message.index).cut({ mode: message.mode });
          return reply(message.id, {});
        case 'heal':
          proxyAt(message.index).heal();
          return reply(message.id, {});
        case 'close':
          await Promise.all(proxies.map((p) => p.close()));
          reply(message.id, {});
          // Nothing should be left to keep this process alive: it exits by itself, or the
          // parent notices that it did not.
          process.disconnect?.();
          return;
      }
    } catch (err) {
      reply(message.id, { error: (err as Error).message });
    }
  })();
});

function proxyAt(index: number): LinkProxy {
  const proxy = proxies[index];
  if (!proxy) throw new Error(`no proxy ${index}`);
  return proxy;
}

function reply(id: number, body: Record<string, unknown>): void {
  process.send?.({ id, ...body });
}
