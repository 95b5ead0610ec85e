import { HclParseError, HclParser } from './hcl-parser';

const SMALL = 'path "a" { capabilities = ["read"] }\n';

/** A list of numbers: the costliest shape per byte for the parser. */
function numbersPolicy(bytes: number): string {
  const items: number[] = [];
  let length = 0;
  for (let i = 0; length < bytes; i++) {
    items.push(i);
    length += String(i).length + 1;
  }
  return `path "a" {\n  x = [${items.join(',')}]\n}\n`;
}

async function failure(promise: Promise<unknown>): Promise<HclParseError> {
  try {
    await promise;
  } catch (err) {
    expect(err).toBeInstanceOf(HclParseError);
    return err as HclParseError;
  }
  throw new Error('expected the parse to fail');
}

describe('HclParser', () => {
  let parser: HclParser;
  beforeEach(() => {
    parser = new HclParser();
  });
  afterEach(async () => {
    await parser.close();
  });

  it('turns HCL into JSON-shaped data and reports syntax errors as such', async () => {
    expect(await parser.parse(SMALL)).toEqual({ path: { a: [{ capabilities: ['read'] }] } });
    const err = await failure(parser.parse('path "a" {'));
    expect(err.kind).toBe('syntax');
    expect(await parser.parse(SMALL)).toEqual({ path: { a: [{ capabilities: ['read'] }] } });
  });

  it('answers parses in the order asked', async () => {
    const texts = ['a', 'b', 'c'].map((p) => `path "${p}" { capabilities = ["read"] }\n`);
    const results = await Promise.all(texts.map((t) => parser.parse(t)));
    expect(results.map((r) => Object.keys((r as { path: object }).path))).toEqual([['a'], ['b'], ['c']]);
  });

  it('stops a parse that runs past its time bound, and the next parse works', async () => {
    await parser.parse(SMALL);
    // Takes the parser seconds; 1 ms cannot be enough.
    const err = await failure(parser.parse(numbersPolicy(256 * 1024), { timeoutMs: 1 }));
    expect(err.kind).toBe('timeout');
    expect(await parser.parse(SMALL)).toEqual({ path: { a: [{ capabilities: ['read'] }] } });
  });

  it('replaces a parser broken by its input, so the parses after it work', async () => {
    // Deep nesting overflows the stack inside the parser or leaves its Go runtime in a state
    // where a later parse fails or never answers; which of them happens varies from run to run.
    for (const depth of [3000, 4096, 8000, 3000, 8000]) {
      const nested = `path "a" {\n  x = ${'{a='.repeat(depth)}1${'}'.repeat(depth)}\n}\n`;
      await parser.parse(nested).catch((err: unknown) => expect(err).toBeInstanceOf(HclParseError));
      expect(await parser.parse(SMALL)).toEqual({ path: { a: [{ capabilities: ['read'] }] } });
    }
  });

  it('keeps the event loop free while it parses', async () => {
    await parser.parse(SMALL);
    let settled = false;
    const parsing = parser.parse(numbersPolicy(32 * 1024)).finally(() => {
      settled = true;
    });
    // The parse takes hundreds of milliseconds; a parse on this thread would run before any timer.
    const settledWhenTimerRan = await new Promise<boolean>((resolve) => setTimeout(() => resolve(settled), 0));
    expect(settledWhenTimerRan).toBe(false);
    await parsing;
  });

  it('refuses queued parses when closed', async () => {
    const refused = failure(parser.parse(SMALL));
    await parser.close();
    expect((await refused).kind).toBe('crashed');
  });
});
