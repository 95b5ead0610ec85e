import { IncomingMessage } from 'node:http';
import { Socket } from 'node:net';
import { PayloadTooLargeError } from '@strongroom/core';
import { readBody } from './read-body';

/** A request as node's parser leaves it: `chunks` pushed, and ended and complete when `done`. */
function request(chunks: string[], done: boolean, headers: Record<string, string> = {}): IncomingMessage {
  const req = new IncomingMessage(new Socket());
  req.headers = headers;
  for (const chunk of chunks) req.push(Buffer.from(chunk));
  if (done) {
    req.complete = true;
    req.push(null);
  }
  return req;
}

describe('readBody', () => {
  it('answers a body that has all arrived at once, without a Promise', () => {
    const body = readBody(request(['{"plain', 'text":"aGk="}'], true), 1024);
    expect(body).toBeInstanceOf(Buffer);
    expect(String(body)).toBe('{"plaintext":"aGk="}');
  });

  it('answers an empty complete body as an empty Buffer', () => {
    const body = readBody(request([], true), 1024);
    expect(body).toBeInstanceOf(Buffer);
    expect((body as Buffer).length).toBe(0);
  });

  it('still ends the request once its body is taken', async () => {
    const req = request(['{}'], true);
    const ended = new Promise<void>((resolve) => req.once('end', () => resolve()));
    readBody(req, 0);
    await ended;
    expect(req.readableEnded).toBe(true);
  });

  it('waits for a body that is still arriving', async () => {
    const req = request(['{"a":'], false);
    const reading = readBody(req, 1024);
    expect(reading).toBeInstanceOf(Promise);
    req.push(Buffer.from('1}'));
    req.complete = true;
    req.push(null);
    expect(String(await reading)).toBe('{"a":1}');
  });

  it('refuses a complete body over the limit that declared no length', async () => {
    await expect(readBody(request(['x'.repeat(600), 'x'.repeat(600)], true), 1000)).rejects.toBeInstanceOf(PayloadTooLargeError);
  });

  it('refuses a declared length over the limit before reading', async () => {
    await expect(readBody(request(['{}'], true, { 'content-length': '5000' }), 1000)).rejects.toBeInstanceOf(PayloadTooLargeError);
  });

  it('refuses an arriving body once it passes the limit', async () => {
    const req = request(['x'.repeat(600)], false);
    const reading = readBody(req, 1000);
    req.push(Buffer.from('x'.repeat(600)));
    await expect(reading).rejects.toBeInstanceOf(PayloadTooLargeError);
  });
});
