import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/*
 * Habit 1: the consensus core does no I/O and reads no clock or random source of its own.
 * Scans every non-test source directly in src/core (the sim/ and scenarios/ harnesses are
 * test code and may use what they like).
 */
const FORBIDDEN: [RegExp, string][] = [
  [/\bDate\b/, 'Date'],
  [/\bsetTimeout\b/, 'setTimeout'],
  [/\bsetInterval\b/, 'setInterval'],
  [/\bsetImmediate\b/, 'setImmediate'],
  [/\bMath\.random\b/, 'Math.random'],
  [/\bperformance\b/, 'performance'],
  [/\bprocess\./, 'process.'],
  [/\bfrom\s+['"]node:/, 'a node: import'],
  [/\brequire\(\s*['"]/, 'require()'],
  [/\bfrom\s+['"](fs|fs\/promises|path|os|net|http|https|child_process|crypto|worker_threads)['"]/, 'a Node built-in import'],
  [/\bimport\(/, 'a dynamic import'],
];

function coreSources(): string[] {
  return readdirSync(__dirname)
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'))
    .map((f) => join(__dirname, f));
}

test('the core sources exist and import only each other', () => {
  const files = coreSources();
  expect(files.map((f) => f.slice(__dirname.length + 1)).sort()).toEqual(
    expect.arrayContaining(['raft-core.ts', 'log.ts', 'progress.ts', 'errors.ts', 'types.ts']),
  );
  for (const file of files) {
    for (const m of readFileSync(file, 'utf8').matchAll(/from\s+['"]([^'"]+)['"]/g)) {
      expect(`${file}: ${m[1]}`).toMatch(/: \.\/[a-z-]+$/);
    }
  }
});

test.each(coreSources().map((f) => [f.slice(__dirname.length + 1), f]))('%s reads no clock, timer, randomness, process or I/O', (_name, file) => {
  // Comments may mention these words; code may not.
  const code = readFileSync(file, 'utf8')
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/\/\/.*$/gm, '');
  for (const [pattern, what] of FORBIDDEN) {
    if (pattern.test(code)) throw new Error(`${file} uses ${what}`);
  }
});
