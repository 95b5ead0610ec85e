import {
  decodeForwardedRequest, decodeForwardedResponse, encodeForwardedRequest, encodeForwardedResponse,
} from './forwarded-call';

describe('requests and answers carried between members', () => {
  it('round-trips a request with repeated headers and a binary body, and an answer', () => {
    const body = Buffer.from([0, 1, 2, 255]);
    const request = { method: 'LIST', url: '/v1/secret/metadata/?x=1', headers: [['x-vault-token', 't'], ['accept', 'a'], ['accept', 'b']] as Array<[string, string]>, remoteAddress: '10.0.0.7', body };
    expect(decodeForwardedRequest(encodeForwardedRequest(request))).toEqual(request);
    const answer = { status: 404, headers: [['content-type', 'application/json']] as Array<[string, string]>, body: Buffer.from('{"errors":[]}') };
    expect(decodeForwardedResponse(encodeForwardedResponse(answer))).toEqual(answer);
    const limited = { ...request, jsonLimits: { maxDepth: 8, maxStringLength: 100, maxObjectEntries: 5, maxArrayElements: 6 } };
    expect(decodeForwardedRequest(encodeForwardedRequest(limited))).toEqual(limited);
    const bare = decodeForwardedRequest(encodeForwardedRequest({ method: 'GET', url: '/v1/sys/leader', headers: [], body: Buffer.alloc(0) }));
    expect(bare).toEqual({ method: 'GET', url: '/v1/sys/leader', headers: [], body: Buffer.alloc(0) });
  });

  it.each([
    [Buffer.from([0, 0]), /too short/],
    [Buffer.from([0, 0, 0, 9, 0x7b]), /truncated/],
    [Buffer.concat([Buffer.from([0, 0, 0, 2]), Buffer.from('[]')]), /not an object/],
    [Buffer.concat([Buffer.from([0, 0, 0, 13]), Buffer.from('{"method":1}')]), /truncated/],
  ])('refuses a malformed frame %#', (payload, message) => {
    expect(() => decodeForwardedRequest(payload)).toThrow(message);
  });

  it('refuses heads without the fields that make a request or an answer', () => {
    const framed = (head: unknown) => {
      const json = Buffer.from(JSON.stringify(head));
      const len = Buffer.alloc(4);
      len.writeUInt32BE(json.length);
      return Buffer.concat([len, json]);
    };
    expect(() => decodeForwardedRequest(framed({ url: '/v1/x', headers: [] }))).toThrow(/method and a URL/);
    expect(() => decodeForwardedRequest(framed({ method: 'GET', url: '/v1/x', headers: [['a']] }))).toThrow(/pair of strings/);
    expect(() => decodeForwardedRequest(framed({ method: 'GET', url: '/v1/x', headers: [], remoteAddress: 5 }))).toThrow(/client address/);
    expect(() => decodeForwardedRequest(framed({ method: 'GET', url: '/v1/x', headers: [], jsonLimits: 5 }))).toThrow(/JSON limits/);
    const limits = { maxDepth: 8, maxStringLength: 100, maxObjectEntries: 5, maxArrayElements: 0 };
    expect(() => decodeForwardedRequest(framed({ method: 'GET', url: '/v1/x', headers: [], jsonLimits: limits }))).toThrow(/maxArrayElements is not a positive integer/);
    expect(() => decodeForwardedResponse(framed({ status: 99, headers: [] }))).toThrow(/valid status/);
  });
});
