import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The packages this one may import: it sits between the core and the Raft node, under the API. */
const ALLOWED = new Set(['@strongroom/base', '@strongroom/core', '@strongroom/raft']);

describe('packages/cluster', () => {
  it('imports only base, core, raft and node built-ins, never the API', () => {
    const offending: string[] = [];
    for (const file of readdirSync(__dirname).filter((f) => f.endsWith('.ts'))) {
      const text = readFileSync(join(__dirname, file), 'utf8');
      for (const [, spec] of text.matchAll(/^(?:import|export)[^;]*? from '([^']+)'/gm)) {
        const name = spec as string;
        if (name.startsWith('node:') || (name.startsWith('./') && !name.includes('..'))) continue;
        if (!ALLOWED.has(name)) offending.push(`${file}: ${name}`);
      }
    }
    expect(offending).toEqual([]);
    const manifest = JSON.parse(readFileSync(join(__dirname, '..', 'package.json'), 'utf8')) as { dependencies?: Record<string, string> };
    expect(Object.keys(manifest.dependencies ?? {}).filter((d) => !ALLOWED.has(d))).toEqual([]);
  });
});
