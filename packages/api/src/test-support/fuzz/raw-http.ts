import * as http from 'node:http';

export interface RawAnswer {
  status: number;
  text: string;
  ms: number;
  /** Set when no answer came within the hard limit (the request was then abandoned). */
  hung?: boolean;
  /** Set when the connection failed before an answer (reset, closed). */
  error?: string;
}

/**
 * UTF-8 percent-encoding of `value`, byte by byte, that also carries lone surrogates (as the
 * three bytes WTF-8 gives them) where encodeURIComponent would throw. `keep` lists the
 * characters sent as they are.
 */
export function percentEncode(value: string, keep: RegExp): string {
  let out = '';
  for (let i = 0; i < value.length; i += 1) {
    const unit = value.charCodeAt(i);
    const ch = value[i] as string;
    if (unit < 0x80 && keep.test(ch)) {
      out += ch;
      continue;
    }
    let cp = unit;
    if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < value.length) {
      const low = value.charCodeAt(i + 1);
      if (low >= 0xdc00 && low <= 0xdfff) {
        cp = 0x10000 + ((unit - 0xd800) << 10) + (low - 0xdc00);
        i += 1;
      }
    }
    const bytes = cp < 0x80 ? [cp]
      : cp < 0x800 ? [0xc0 | (cp >> 6), 0x80 | (cp & 0x3f)]
        : cp < 0x10000 ? [0xe0 | (cp >> 12), 0x80 | ((cp >> 6) & 0x3f), 0x80 | (cp & 0x3f)]
          : [0xf0 | (cp >> 18), 0x80 | ((cp >> 12) & 0x3f), 0x80 | ((cp >> 6) & 0x3f), 0x80 | (cp & 0x3f)];
    out += bytes.map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join('');
  }
  return out;
}

/**
 * One request with the path sent exactly as given (fetch would resolve `..` and `%2e%2e`), over
 * a connection of `agent`. Resolves with whatever came back; never rejects.
 */
export function sendRaw(options: {
  baseUrl: string; method: string; path: string; headers: Record<string, string>; body?: string; agent: http.Agent; hardLimitMs: number;
}): Promise<RawAnswer> {
  const url = new URL(options.baseUrl);
  const started = Date.now();
  return new Promise((resolve) => {
    let settled = false;
    const finish = (answer: Omit<RawAnswer, 'ms'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ ...answer, ms: Date.now() - started });
    };
    const headers = { ...options.headers };
    if (options.body !== undefined) headers['content-length'] = String(Buffer.byteLength(options.body));
    let req: http.ClientRequest;
    try {
      req = http.request({ host: url.hostname, port: url.port, method: options.method, path: options.path, headers, agent: options.agent });
    } catch (err) {
      finish({ status: 0, text: '', error: `not sendable: ${(err as Error).message}` });
      return;
    }
    const timer = setTimeout(() => {
      finish({ status: 0, text: '', hung: true });
      req.destroy();
    }, options.hardLimitMs);
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => finish({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', (err) => finish({ status: res.statusCode ?? 0, text: '', error: err.message }));
    });
    req.on('error', (err) => finish({ status: 0, text: '', error: err.message }));
    req.end(options.body);
  });
}
