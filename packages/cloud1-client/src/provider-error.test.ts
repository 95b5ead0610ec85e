import { ProviderError } from './provider-error';

describe('ProviderError', () => {
  const answered = (name: string, status: number, fault: 'client' | 'server', throttling = false) =>
    Object.assign(new Error('said no'), { name, $fault: fault, $metadata: { httpStatusCode: status }, ...(throttling ? { $retryable: { throttling } } : {}) });

  it('is a 400 naming the provider code when the provider refused the request', () => {
    const err = new ProviderError('creating user u', answered('NoSuchEntity', 404, 'client'));
    expect(err.status).toBe(400);
    expect(err.providerCode).toBe('NoSuchEntity');
    expect(err.message).toBe('creating user u failed: NoSuchEntity: said no');
  });

  it('is a 502 when the provider failed, throttled, or never answered', () => {
    expect(new ProviderError('x', answered('InternalFailure', 500, 'server')).status).toBe(502);
    expect(new ProviderError('x', answered('Throttling', 400, 'client', true)).status).toBe(502);
    const unreachable = new ProviderError('x', Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' }));
    expect(unreachable.status).toBe(502);
    expect(unreachable.providerCode).toBe('');
  });
});
