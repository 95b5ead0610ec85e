import type * as http from 'node:http';
import { createListMethodRewriter, isListRequest, type ListMethodRewriter } from './list-method';

const MARKER = 'x-strongroom-list: true\r\n';

function feed(chunks: Array<string | Buffer>, rewriter: ListMethodRewriter = createListMethodRewriter()): string {
  const out: Buffer[] = [];
  for (const chunk of chunks) out.push(rewriter.push(typeof chunk === 'string' ? Buffer.from(chunk, 'latin1') : chunk));
  out.push(rewriter.end());
  return Buffer.concat(out).toString('latin1');
}

describe('createListMethodRewriter', () => {
  const list = 'LIST /v1/secret/metadata/ HTTP/1.1\r\nHost: vault\r\nX-Vault-Token: t\r\n\r\n';
  const listRewritten = `GET /v1/secret/metadata/ HTTP/1.1\r\n${MARKER}Host: vault\r\nX-Vault-Token: t\r\n\r\n`;
  const post = 'POST /v1/secret/data/a HTTP/1.1\r\nHost: vault\r\ncontent-LENGTH: 13\r\n\r\n{"data":{}}\r\n';

  it('rewrites LIST to GET plus the marker header', () => {
    expect(feed([list])).toBe(listRewritten);
  });

  it('returns the very same buffer for requests it does not touch', () => {
    const rewriter = createListMethodRewriter();
    for (const request of ['GET /v1/sys/health HTTP/1.1\r\nHost: a\r\n\r\n', post, 'DELETE /x HTTP/1.1\r\n\r\n']) {
      const chunk = Buffer.from(request, 'latin1');
      expect(rewriter.push(chunk)).toBe(chunk);
    }
    expect(rewriter.passthrough).toBe(false);
  });

  it('gives the same output whatever the split of a pipelined stream', () => {
    const input = list + post + list;
    const expected = listRewritten + post + listRewritten;
    expect(feed([input])).toBe(expected);
    expect(feed([...input])).toBe(expected);
    for (let i = 0; i <= input.length; i++) {
      expect(feed([input.slice(0, i), input.slice(i)])).toBe(expected);
    }
    for (let i = 0; i <= input.length; i += 3) {
      for (let j = i; j <= input.length; j += 2) {
        expect(feed([input.slice(0, i), input.slice(i, j), input.slice(j)])).toBe(expected);
      }
    }
  });

  it('does not look for requests inside a Content-Length body', () => {
    const body = 'LIST /x HTTP/1.1\r\n\r\n';
    const request = `PUT /v1/secret/data/a HTTP/1.1\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
    expect(feed([request + list])).toBe(request + listRewritten);
    for (let i = 0; i <= request.length; i++) {
      expect(feed([request.slice(0, i), request.slice(i) + list])).toBe(request + listRewritten);
    }
  });

  it('follows chunked bodies with extensions and trailers', () => {
    const data = 'LIST /y HTTP/1.1\r\n\r\n\r\n12345';
    const request =
      'POST /v1/a HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, Chunked\r\n\r\n' +
      '5;name=value;quoted="a;b"\r\nLIST \r\n' +
      `${data.length.toString(16).toUpperCase()}\r\n${data}\r\n` +
      '0;last\r\nX-Trailer: LIST\r\nOther: 1\r\n\r\n';
    expect(feed([request + list])).toBe(request + listRewritten);
    const expected = request + listRewritten;
    const input = request + list;
    for (let i = 0; i <= input.length; i++) {
      expect(feed([input.slice(0, i), input.slice(i)])).toBe(expected);
    }
  });

  it('passes large body chunks through as the same buffer', () => {
    const rewriter = createListMethodRewriter();
    rewriter.push(Buffer.from('PUT /a HTTP/1.1\r\nContent-Length: 300000\r\n\r\n', 'latin1'));
    const body = Buffer.alloc(65536, 'L');
    expect(rewriter.push(body)).toBe(body);
    const chunkedRewriter = createListMethodRewriter();
    chunkedRewriter.push(Buffer.from('PUT /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n100000\r\n', 'latin1'));
    expect(chunkedRewriter.push(body)).toBe(body);
  });

  it('treats method names case-sensitively, like Vault', () => {
    const lower = 'list /v1/secret/metadata/ HTTP/1.1\r\nHost: a\r\n\r\n';
    expect(feed([lower + list])).toBe(lower + listRewritten);
    expect(feed(['LISTS / HTTP/1.1\r\n\r\n'])).toBe('LISTS / HTTP/1.1\r\n\r\n');
    expect(feed(['LIS', 'TS / HTTP/1.1\r\n\r\n'])).toBe('LISTS / HTTP/1.1\r\n\r\n');
  });

  it('tolerates empty lines between requests', () => {
    expect(feed([`\r\n${list}\r\n`, `\r\n${list}`])).toBe(`\r\n${listRewritten}\r\n\r\n${listRewritten}`);
  });

  it('hands back a held "LIST" prefix at end of input', () => {
    const rewriter = createListMethodRewriter();
    expect(rewriter.push(Buffer.from('LIS')).length).toBe(0);
    expect(rewriter.end().toString()).toBe('LIS');
  });

  it('passes garbage through untouched', () => {
    const garbage = Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03, 0x0a, 0x0d]);
    expect(feed([garbage, list])).toBe(garbage.toString('latin1') + list);
    const rewriter = createListMethodRewriter();
    expect(rewriter.push(Buffer.from('\x00\x01\x02 nonsense'))).toEqual(Buffer.from('\x00\x01\x02 nonsense'));
  });

  it.each([
    ['both Content-Length and Transfer-Encoding', 'POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n'],
    ['a duplicate Content-Length', 'POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc'],
    ['a signed Content-Length', 'POST / HTTP/1.1\r\nContent-Length: +3\r\n\r\nabc'],
    ['a non-chunked Transfer-Encoding', 'POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n'],
    ['a bad chunk size', 'POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n'],
    ['whitespace after a chunk size', 'POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1 ;x\r\na\r\n0\r\n\r\n'],
    ['chunk data not followed by CRLF', 'POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n0\r\n\r\n'],
    ['a bare LF', 'GET / HTTP/1.1\nHost: a\n\n'],
    ['an obs-fold header', 'GET / HTTP/1.1\r\nX-A: b\r\n c\r\n\r\n'],
    ['a header without a colon', 'GET / HTTP/1.1\r\nnonsense\r\n\r\n'],
    ['a head over 64 KiB', `GET / HTTP/1.1\r\nX-Big: ${'a'.repeat(70000)}\r\n\r\n`],
    ['an upgrade', 'GET /ws HTTP/1.1\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n'],
    ['a CONNECT', 'CONNECT vault:443 HTTP/1.1\r\nHost: vault:443\r\n\r\n'],
  ])('stops rewriting after %s', (_name, request) => {
    const rewriter = createListMethodRewriter();
    expect(feed([request, list], rewriter)).toBe(request + list);
    expect(rewriter.passthrough).toBe(true);
  });

  it('never buffers a head that node would already have rejected', () => {
    const rewriter = createListMethodRewriter();
    const line = Buffer.from(`GET /${'a'.repeat(40000)}`);
    expect(rewriter.push(line)).toBe(line);
    expect(rewriter.push(line)).toBe(line);
    expect(rewriter.passthrough).toBe(true);
  });
});

describe('isListRequest', () => {
  it('reads the marker header', () => {
    const req = (headers: http.IncomingHttpHeaders) => ({ headers }) as http.IncomingMessage;
    expect(isListRequest(req({ 'x-strongroom-list': 'true' }))).toBe(true);
    expect(isListRequest(req({ 'x-strongroom-list': 'false' }))).toBe(false);
    expect(isListRequest(req({}))).toBe(false);
  });
});
