import type { UiServer } from './ui-harness';

export interface NewMessage {
  title: string;
  body: string;
  type: 'banner' | 'modal';
  authenticated: boolean;
}

/** Creates an active message as root, the way an operator would through the API. */
export async function createMessage(server: UiServer, m: NewMessage): Promise<string> {
  const res = await server.api<{ data: { id: string } }>('POST', 'sys/config/ui/custom-messages', {
    title: m.title,
    message: Buffer.from(m.body).toString('base64'),
    type: m.type,
    authenticated: m.authenticated,
    start_time: new Date(Date.now() - 60_000).toISOString(),
  });
  if (res.status !== 200) throw new Error(`creating a message answered ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body.data.id;
}

export async function deleteAllMessages(server: UiServer): Promise<void> {
  const res = await server.api<{ data?: { keys?: string[] } }>('GET', 'sys/config/ui/custom-messages?list=true');
  for (const id of res.body.data?.keys ?? []) await server.api('DELETE', `sys/config/ui/custom-messages/${id}`);
}
