import { ACL, checkParameters, type Operation } from './acl';
import { DEFAULT_POLICY_TEXT } from './default-policy';
import { type Capability, type Policy, parsePolicy } from './policy';

const OPS: Operation[] = ['read', 'list', 'create', 'update', 'patch', 'delete'];
const CAPS: Capability[] = ['create', 'read', 'update', 'patch', 'delete', 'list', 'sudo', 'deny'];

async function aclOf(...texts: string[]): Promise<ACL> {
  const policies: Policy[] = [];
  for (const [i, t] of texts.entries()) policies.push(await parsePolicy(`p${i}`, t));
  return ACL.compile(policies);
}

function rule(path: string, caps: string[]): string {
  return `path "${path}" { capabilities = ${JSON.stringify(caps)} }\n`;
}

/** The pattern of the rule that governs `path` for a read. */
function winner(acl: ACL, path: string): string | undefined {
  return acl.ruleFor(path)?.path;
}

describe('capability x operation matrix', () => {
  for (const cap of CAPS) {
    it(`a policy granting only "${cap}" allows exactly the matching operation`, async () => {
      const acl = await aclOf(rule('secret/foo', [cap]));
      for (const op of OPS) {
        const res = acl.allowed('secret/foo', op);
        expect({ op, allowed: res.allowed }).toEqual({ op, allowed: cap === op });
        expect(res.sudo).toBe(cap === 'sudo');
        expect(res.root).toBe(false);
        expect(res.capabilities).toEqual([cap]);
        expect(res.rule?.path).toBe('secret/foo');
      }
      // Deny by default everywhere else.
      for (const op of OPS) {
        const other = acl.allowed('secret/bar', op);
        expect(other.allowed).toBe(false);
        expect(other.sudo).toBe(false);
        expect(other.rule).toBeUndefined();
      }
    });
  }

  it('an empty ACL denies everything', () => {
    const acl = ACL.compile([]);
    for (const op of OPS) expect(acl.allowed('', op).allowed).toBe(false);
    expect(acl.capabilities('secret/foo')).toEqual(['deny']);
  });

  it('returns the same frozen result object on every call', async () => {
    const acl = await aclOf(rule('secret/*', ['read']));
    const a = acl.allowed('secret/x', 'read');
    expect(acl.allowed('secret/y/z', 'read')).toBe(a);
    expect(Object.isFrozen(a)).toBe(true);
    expect(acl.allowed('nope', 'read')).toBe(acl.allowed('other', 'list'));
  });

  it('gives results that serialize (no reference cycle is visible)', async () => {
    const acl = await aclOf(rule('secret/*', ['read']));
    const json = JSON.parse(JSON.stringify(acl.allowed('secret/x', 'read'))) as Record<string, unknown>;
    expect(json).toMatchObject({ allowed: true, sudo: false, capabilities: ['read'], rule: { path: 'secret/*' } });
  });
});

describe('root', () => {
  it('allows every operation with sudo, on any path', async () => {
    const acl = ACL.compile([await parsePolicy('default', DEFAULT_POLICY_TEXT), { name: 'root', text: '', rules: [] }]);
    expect(acl.root).toBe(true);
    for (const op of OPS) {
      const res = acl.allowed('sys/seal', op);
      expect(res).toMatchObject({ allowed: true, sudo: true, root: true });
      expect(res.rule).toBeUndefined();
    }
    expect(acl.allowed('sys/seal', 'read').capabilities).toEqual([
      'create',
      'delete',
      'list',
      'patch',
      'read',
      'sudo',
      'update',
    ]);
    expect(acl.capabilities('anything/at/all')).toEqual(['root']);
    expect(acl.ruleFor('x')).toBeUndefined();
  });
});

describe('matching', () => {
  it('lets an exact rule beat every wildcard rule', async () => {
    const acl = await aclOf(rule('secret/*', ['deny']), rule('secret/+', ['update']), rule('secret/foo', ['read']));
    expect(acl.allowed('secret/foo', 'read').allowed).toBe(true);
    expect(acl.allowed('secret/foo', 'update').allowed).toBe(false);
    expect(winner(acl, 'secret/bar')).toBe('secret/+');
    expect(winner(acl, 'secret/bar/baz')).toBe('secret/*');
  });

  it('matches a glob on any prefix, including the bare glob', async () => {
    const acl = await aclOf(rule('*', ['list']), rule('secret/fo*', ['read']));
    expect(winner(acl, 'secret/foo/bar')).toBe('secret/fo*');
    expect(winner(acl, 'secret/fo')).toBe('secret/fo*');
    expect(winner(acl, 'secret/f')).toBe('*');
    expect(winner(acl, '')).toBe('*');
  });

  it('picks the longest glob: secret/a/b* over secret/a*', async () => {
    const acl = await aclOf(rule('secret/a*', ['read']), rule('secret/a/b*', ['update']));
    expect(winner(acl, 'secret/a/bc')).toBe('secret/a/b*');
    expect(winner(acl, 'secret/a/c')).toBe('secret/a*');
    expect(winner(acl, 'secret/ab')).toBe('secret/a*');
    expect(acl.allowed('secret/a/bc', 'read').allowed).toBe(false);
  });

  it('prefers secret/+/foo over secret/* (same first wildcard, no trailing glob wins)', async () => {
    const acl = await aclOf(rule('secret/*', ['read']), rule('secret/+/foo', ['update']));
    expect(winner(acl, 'secret/a/foo')).toBe('secret/+/foo');
    expect(acl.allowed('secret/a/foo', 'read').allowed).toBe(false);
    expect(winner(acl, 'secret/a/food')).toBe('secret/*');
    expect(winner(acl, 'secret/a/foo/b')).toBe('secret/*');
  });

  it('prefers the rule whose first wildcard comes later: secret/a/* over secret/+/x', async () => {
    const acl = await aclOf(rule('secret/+/x', ['read']), rule('secret/a/*', ['update']));
    expect(winner(acl, 'secret/a/x')).toBe('secret/a/*');
    expect(winner(acl, 'secret/b/x')).toBe('secret/+/x');
  });

  it('prefers a later + over an earlier *', async () => {
    const acl = await aclOf(rule('sec*', ['read']), rule('secret/+', ['update']));
    expect(winner(acl, 'secret/a')).toBe('secret/+');
    expect(winner(acl, 'secret/a/b')).toBe('sec*');
  });

  it('prefers no trailing glob among + rules: secret/+/bc over secret/+/b*', async () => {
    const acl = await aclOf(rule('secret/+/b*', ['read']), rule('secret/+/bc', ['update']));
    expect(winner(acl, 'secret/x/bc')).toBe('secret/+/bc');
    expect(winner(acl, 'secret/x/bcd')).toBe('secret/+/b*');
    expect(winner(acl, 'secret/x/b/c/d')).toBe('secret/+/b*');
  });

  it('prefers fewer + segments: secret/+/b over secret/+/+', async () => {
    const acl = await aclOf(rule('secret/+/+', ['read']), rule('secret/+/b', ['update']));
    expect(winner(acl, 'secret/a/b')).toBe('secret/+/b');
    expect(winner(acl, 'secret/a/c')).toBe('secret/+/+');
  });

  it('prefers the longer pattern when the rest ties: secret/+/bc* over secret/+/b*', async () => {
    const acl = await aclOf(rule('secret/+/b*', ['read']), rule('secret/+/bc*', ['update']));
    expect(winner(acl, 'secret/x/bcd')).toBe('secret/+/bc*');
    expect(winner(acl, 'secret/x/bd')).toBe('secret/+/b*');
  });

  it('ranks length before lexical order: a/+/+/cc over a/+/b/+', async () => {
    const acl = await aclOf(rule('a/+/b/+', ['read']), rule('a/+/+/cc', ['update']));
    expect(winner(acl, 'a/x/b/cc')).toBe('a/+/+/cc');
    expect(winner(acl, 'a/x/b/c')).toBe('a/+/b/+');
  });

  it('falls back to the lexically larger pattern', async () => {
    const acl = await aclOf(rule('a/+/+/b', ['read']), rule('a/+/c/+', ['update']));
    expect(winner(acl, 'a/x/c/b')).toBe('a/+/c/+');
    expect(acl.allowed('a/x/c/b', 'update').allowed).toBe(true);
  });

  it('makes + match exactly one segment, possibly empty', async () => {
    const acl = await aclOf(rule('secret/+/x', ['read']), rule('+', ['list']));
    expect(winner(acl, 'secret/a/x')).toBe('secret/+/x');
    expect(winner(acl, 'secret//x')).toBe('secret/+/x');
    expect(winner(acl, 'secret/a/b/x')).toBeUndefined();
    expect(winner(acl, 'secret/x')).toBe(undefined);
    expect(winner(acl, 'secret')).toBe('+');
    expect(winner(acl, 'secret/')).toBeUndefined();
  });

  it('needs the segment before a trailing /* to exist', async () => {
    const acl = await aclOf(rule('secret/+/*', ['read']));
    expect(winner(acl, 'secret/a')).toBeUndefined();
    expect(winner(acl, 'secret/a/')).toBe('secret/+/*');
    expect(winner(acl, 'secret/a/b/c')).toBe('secret/+/*');
  });

  it('treats a + inside a segment as a literal character', async () => {
    const acl = await aclOf(rule('sys/policy/a+b', ['read']));
    expect(acl.allowed('sys/policy/a+b', 'read').allowed).toBe(true);
    expect(acl.allowed('sys/policy/axb', 'read').allowed).toBe(false);
  });

  it('lets a more specific rule with no capabilities shadow a broader grant', async () => {
    const acl = await aclOf(rule('secret/*', ['read']), rule('secret/private/*', []));
    expect(acl.allowed('secret/public', 'read').allowed).toBe(true);
    expect(acl.allowed('secret/private/x', 'read').allowed).toBe(false);
    expect(acl.capabilities('secret/private/x')).toEqual(['deny']);
  });

  it('matches a rule written with a leading slash', async () => {
    const acl = await aclOf(rule('/secret/foo', ['read']));
    expect(acl.allowed('secret/foo', 'read').allowed).toBe(true);
  });

  describe('list on a directory path', () => {
    it('applies an exact rule foo to LIST foo/', async () => {
      const acl = await aclOf(rule('secret/metadata/app', ['list', 'read']));
      expect(acl.allowed('secret/metadata/app/', 'list').allowed).toBe(true);
      expect(acl.allowed('secret/metadata/app/', 'list').rule?.path).toBe('secret/metadata/app');
      // Only listing trims the slash.
      expect(acl.allowed('secret/metadata/app/', 'read').allowed).toBe(false);
      expect(acl.capabilities('secret/metadata/app/')).toEqual(['deny']);
    });

    it('prefers an exact foo/ rule over the trimmed foo one', async () => {
      const acl = await aclOf(rule('secret/app', ['list']), rule('secret/app/', ['deny']));
      expect(acl.allowed('secret/app/', 'list').allowed).toBe(false);
      expect(acl.allowed('secret/app', 'list').allowed).toBe(true);
    });

    it('does not apply an exact foo/ rule to LIST foo', async () => {
      const acl = await aclOf(rule('secret/app/', ['list']));
      expect(acl.allowed('secret/app', 'list').allowed).toBe(false);
    });

    it('prefers the trimmed exact rule over a glob', async () => {
      const acl = await aclOf(rule('secret/*', ['deny']), rule('secret/app', ['list']));
      expect(acl.allowed('secret/app/', 'list').allowed).toBe(true);
      expect(acl.allowed('secret/other/', 'list').allowed).toBe(false);
    });
  });
});

describe('merging across policies', () => {
  it('unions capabilities for the same pattern', async () => {
    const acl = await aclOf(rule('secret/*', ['read']), rule('secret/*', ['update', 'list']));
    const res = acl.allowed('secret/x', 'update');
    expect(res.allowed).toBe(true);
    expect(res.capabilities).toEqual(['list', 'read', 'update']);
    expect(acl.capabilities('secret/x')).toEqual(['list', 'read', 'update']);
  });

  it('merges repeated stanzas within one policy', async () => {
    const acl = await aclOf('path "a" {\n  capabilities = ["read"]\n}\npath "a" {\n  capabilities = ["sudo"]\n}\n');
    expect(acl.allowed('a', 'read')).toMatchObject({ allowed: true, sudo: true });
  });

  it('lets deny win whichever policy it comes from', async () => {
    for (const order of [
      [rule('secret/x', ['deny']), rule('secret/x', ['read', 'sudo'])],
      [rule('secret/x', ['read', 'sudo']), rule('secret/x', ['deny'])],
    ]) {
      const acl = await aclOf(...order);
      const res = acl.allowed('secret/x', 'read');
      expect(res).toMatchObject({ allowed: false, sudo: false, capabilities: ['deny'] });
      expect(acl.capabilities('secret/x')).toEqual(['deny']);
    }
  });

  it('lets a more specific deny carve out of a broad grant', async () => {
    const acl = await aclOf(rule('secret/*', ['read', 'list']), rule('secret/super*', ['deny']));
    expect(acl.allowed('secret/foo', 'read').allowed).toBe(true);
    expect(acl.allowed('secret/superuser', 'read').allowed).toBe(false);
    expect(acl.allowed('secret/superuser', 'list').allowed).toBe(false);
  });

  it('does not merge an exact rule with the glob of the same stem', async () => {
    const acl = await aclOf(rule('secret/foo', ['read']), rule('secret/foo*', ['deny']));
    expect(acl.allowed('secret/foo', 'read').allowed).toBe(true);
    expect(acl.allowed('secret/foo/bar', 'read').allowed).toBe(false);
  });

  it('merges parameter constraints and wrapping TTLs', async () => {
    const acl = await aclOf(
      `path "a" {
  capabilities = ["update"]
  allowed_parameters = { "x" = ["1"], "y" = [] }
  required_parameters = ["x"]
  min_wrapping_ttl = "10m"
  max_wrapping_ttl = "1h"
}`,
      `path "a" {
  capabilities = ["create"]
  allowed_parameters = { "x" = ["2"], "y" = ["only"], "z" = ["3"] }
  denied_parameters = { "w" = [] }
  required_parameters = ["z"]
  min_wrapping_ttl = "5m"
  max_wrapping_ttl = "2h"
}`,
    );
    const r = acl.ruleFor('a');
    expect(r?.capabilities).toEqual(['create', 'update']);
    expect(r?.allowedParameters).toEqual(
      new Map<string, string[]>([
        ['x', ['1', '2']],
        ['y', []],
        ['z', ['3']],
      ]),
    );
    expect(r?.deniedParameters).toEqual(new Map([['w', []]]));
    expect(r?.requiredParameters).toEqual(['x', 'z']);
    expect(r?.minWrappingTtl).toBe(300);
    expect(r?.maxWrappingTtl).toBe(7200);
  });

  it('drops constraints when the merged rule is denied', async () => {
    const acl = await aclOf(
      '{"path": {"a": {"capabilities": ["read"], "required_parameters": ["x"], "max_wrapping_ttl": 60}}}',
      rule('a', ['deny']),
    );
    const r = acl.ruleFor('a');
    expect(r?.capabilities).toEqual(['deny']);
    expect(r?.requiredParameters).toEqual([]);
    expect(r?.maxWrappingTtl).toBeUndefined();
  });
});

describe('capabilities()', () => {
  it('answers sorted capability names, or deny', async () => {
    const acl = await aclOf(rule('secret/*', ['update', 'sudo', 'create', 'read']), rule('sys/*', ['deny']));
    expect(acl.capabilities('secret/foo')).toEqual(['create', 'read', 'sudo', 'update']);
    expect(acl.capabilities('sys/mounts')).toEqual(['deny']);
    expect(acl.capabilities('other')).toEqual(['deny']);
  });

  it('returns a fresh array each time', async () => {
    const acl = await aclOf(rule('a', ['read']));
    const caps = acl.capabilities('a');
    caps.push('mutated');
    expect(acl.capabilities('a')).toEqual(['read']);
  });
});

describe('parameter constraints', () => {
  async function ruleWith(block: string) {
    const acl = await aclOf(`path "p" {\n  capabilities = ["create", "update"]\n${block}\n}\n`);
    const r = acl.allowed('p', 'update').rule;
    expect(r).toBeDefined();
    return (data: Record<string, unknown>) => acl.checkParameters(r, data);
  }

  it('passes anything when there are no constraints', async () => {
    const check = await ruleWith('');
    expect(check({ anything: 1, at: ['all'] })).toBeNull();
    expect(checkParameters(undefined, { a: 1 })).toBeNull();
  });

  it('requires required parameters, case-insensitively', async () => {
    const check = await ruleWith('  required_parameters = ["owner", "ttl"]');
    expect(check({ owner: 'a' })).toBe('required parameter "ttl" is missing');
    expect(check({})).toBe('required parameter "owner" is missing');
    expect(check({ Owner: 'a', ttl: '1h' })).toBeNull();
  });

  it('denies a parameter outright with an empty list', async () => {
    const check = await ruleWith('  denied_parameters = { "policies" = [] }');
    expect(check({ policies: 'admin' })).toBe('parameter "policies" is denied');
    expect(check({ POLICIES: [] })).toBe('parameter "POLICIES" is denied');
    expect(check({ other: 'x' })).toBeNull();
    expect(check({})).toBeNull();
  });

  it('denies listed values, element-wise for lists', async () => {
    const check = await ruleWith('  denied_parameters = { "policies" = ["root", "admin-*"], "n" = [0] }');
    expect(check({ policies: 'root' })).toBe('parameter "policies" has a denied value');
    expect(check({ policies: ['default', 'admin-ops'] })).toBe('parameter "policies" has a denied value');
    expect(check({ policies: ['default', 'dev'] })).toBeNull();
    expect(check({ n: 0 })).toBe('parameter "n" has a denied value');
    expect(check({ n: '0' })).toBe('parameter "n" has a denied value');
    expect(check({ n: 1 })).toBeNull();
  });

  it('denies every parameter with the * key', async () => {
    const check = await ruleWith('  denied_parameters = { "*" = [] }');
    expect(check({ a: 1 })).toBe('parameter "a" is denied: the policy denies all parameters');
    expect(check({})).toBeNull();
  });

  it('allows only listed keys, each with any value when its list is empty', async () => {
    const check = await ruleWith('  allowed_parameters = { "name" = [], "size" = ["small", "medium"] }');
    expect(check({ name: 'anything', size: 'small' })).toBeNull();
    expect(check({ NAME: 'x' })).toBeNull();
    expect(check({ colour: 'red' })).toBe('parameter "colour" is not allowed');
    expect(check({ size: 'large' })).toBe('parameter "size" has a value that is not allowed');
    expect(check({ size: ['small', 'medium'] })).toBeNull();
    expect(check({ size: ['small', 'large'] })).toBe('parameter "size" has a value that is not allowed');
    expect(check({ size: [] })).toBe('parameter "size" has a value that is not allowed');
    expect(check({ size: { small: true } })).toBe('parameter "size" has a value that is not allowed');
    expect(check({})).toBeNull();
  });

  it('lets * admit unlisted keys while listed keys stay restricted', async () => {
    const check = await ruleWith('  allowed_parameters = { "*" = [], "size" = ["small"] }');
    expect(check({ whatever: 'x', size: 'small' })).toBeNull();
    expect(check({ size: 'large' })).toBe('parameter "size" has a value that is not allowed');
  });

  it('compares numbers and booleans as strings', async () => {
    const check = await ruleWith('  allowed_parameters = { "n" = [1, "2"], "b" = [true] }');
    expect(check({ n: 1 })).toBeNull();
    expect(check({ n: '1' })).toBeNull();
    expect(check({ n: 2 })).toBeNull();
    expect(check({ n: 3 })).toBe('parameter "n" has a value that is not allowed');
    expect(check({ b: true })).toBeNull();
    expect(check({ b: 'true' })).toBeNull();
    expect(check({ b: false })).toBe('parameter "b" has a value that is not allowed');
    expect(check({ n: null })).toBe('parameter "n" has a value that is not allowed');
  });

  it('globs values with * at either end, and treats a lone * literally', async () => {
    const check = await ruleWith('  allowed_parameters = { "p" = ["dev-*", "*-ro", "*mid*"], "s" = ["*"] }');
    expect(check({ p: 'dev-a' })).toBeNull();
    expect(check({ p: 'app-ro' })).toBeNull();
    expect(check({ p: 'a-mid-b' })).toBeNull();
    expect(check({ p: 'prod-rw' })).toBe('parameter "p" has a value that is not allowed');
    expect(check({ s: '*' })).toBeNull();
    expect(check({ s: 'x' })).toBe('parameter "s" has a value that is not allowed');
  });

  it('checks denied before allowed', async () => {
    const check = await ruleWith('  allowed_parameters = { "*" = [] }\n  denied_parameters = { "ttl" = [] }');
    expect(check({ a: 1 })).toBeNull();
    expect(check({ a: 1, ttl: '1h' })).toBe('parameter "ttl" is denied');
  });

  it('works on a hand-built rule too', () => {
    const msg = checkParameters(
      {
        path: 'x',
        kind: 'exact',
        capabilities: ['update'],
        capabilityBits: 4,
        allowedParameters: new Map([['a', ['1']]]),
        requiredParameters: [],
      },
      { a: '2' },
    );
    expect(msg).toBe('parameter "a" has a value that is not allowed');
  });
});

describe('default policy', () => {
  it('lets a token look itself up but not read secrets', async () => {
    const acl = ACL.compile([await parsePolicy('default', DEFAULT_POLICY_TEXT)]);
    expect(acl.allowed('auth/token/lookup-self', 'read').allowed).toBe(true);
    expect(acl.allowed('auth/token/lookup-self', 'update').allowed).toBe(false);
    expect(acl.allowed('auth/token/renew-self', 'update').allowed).toBe(true);
    expect(acl.allowed('sys/wrapping/unwrap', 'update').allowed).toBe(true);
    expect(acl.allowed('sys/tools/hash/sha2-512', 'update').allowed).toBe(true);
    expect(acl.allowed('cubbyhole/mine', 'create').allowed).toBe(true);
    expect(acl.allowed('cubbyhole/', 'list').allowed).toBe(true);
    expect(acl.allowed('secret/foo', 'read').allowed).toBe(false);
    expect(acl.allowed('auth/token/lookup', 'update').allowed).toBe(false);
    expect(acl.allowed('sys/seal', 'update').sudo).toBe(false);
    expect(acl.capabilities('sys/capabilities-self')).toEqual(['update']);
  });
});

/**
 * A literal, allocation-happy transcription of the documented selection rules, used to check the
 * optimised matcher on random rule sets.
 */
function referenceWinner(patterns: string[], path: string, listing: boolean): string | undefined {
  const exact = patterns.filter((p) => !p.endsWith('*') && !p.split('/').includes('+'));
  if (exact.includes(path)) return path;
  if (listing && path.endsWith('/') && exact.includes(path.slice(0, -1))) return path.slice(0, -1);

  type Cand = { pattern: string; first: number; prefix: boolean; wc: number; stem: string };
  const cands: Cand[] = [];
  const parts = path.split('/');
  for (const p of patterns) {
    if (exact.includes(p)) continue;
    const prefix = p.endsWith('*');
    const stem = prefix ? p.slice(0, -1) : p;
    const segs = stem.split('/');
    const hasPlus = segs.includes('+');
    if (!hasPlus) {
      if (path.startsWith(stem)) cands.push({ pattern: p, first: stem.length, prefix: true, wc: 0, stem });
      continue;
    }
    if (parts.length < segs.length || (!prefix && parts.length !== segs.length)) continue;
    const ok = segs.every((s, i) => {
      const part = parts[i] as string;
      if (s === '+' || s === part) return true;
      return prefix && i === segs.length - 1 && part.startsWith(s);
    });
    if (ok) cands.push({ pattern: p, first: p.indexOf('+'), prefix, wc: segs.filter((s) => s === '+').length, stem });
  }
  cands.sort(
    (a, b) =>
      b.first - a.first ||
      Number(a.prefix) - Number(b.prefix) ||
      a.wc - b.wc ||
      b.stem.length - a.stem.length ||
      (a.stem < b.stem ? 1 : a.stem > b.stem ? -1 : 0),
  );
  return cands[0]?.pattern;
}

describe('matcher agrees with a reference implementation', () => {
  // Deterministic PRNG so a failure reproduces.
  let seed = 12345;
  const rand = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  const pick = <T>(xs: readonly T[]): T => xs[rand(xs.length)] as T;
  const SEGS = ['a', 'b', 'ab', ''];

  // Paths are mostly instances of the patterns, so that several rules compete for them.
  function randomPath(patterns: readonly string[]): string {
    if (rand(4) === 0) {
      const n = 1 + rand(4);
      const segs: string[] = [];
      for (let i = 0; i < n; i++) segs.push(pick(SEGS));
      return segs.join('/');
    }
    const p = pick(patterns);
    const stem = p.endsWith('*') ? p.slice(0, -1) : p;
    let path = stem
      .split('/')
      .map((s) => (s === '+' ? pick(SEGS) : s))
      .join('/');
    if (p.endsWith('*')) path += pick(['', 'a', 'b/a', '/b']);
    return path;
  }

  // Patterns are variations on one base path (some segments made '+', cut short, globbed), so
  // that they overlap the way real policies do.
  function randomPattern(base: readonly string[]): string {
    const n = 1 + rand(base.length);
    const segs = base.slice(0, n).map((s) => (rand(3) === 0 ? '+' : s));
    const last = segs[n - 1] as string;
    const glob = rand(2) === 0 && last !== '+';
    if (glob && rand(2) === 0) segs[n - 1] = last.slice(0, rand(last.length + 1));
    let p = segs.join('/');
    if (glob) p += '*';
    else if (rand(5) === 0) p += '/*';
    return p;
  }

  it('on 500 random rule sets', async () => {
    let contested = 0;
    for (let round = 0; round < 500; round++) {
      const base = Array.from({ length: 2 + rand(3) }, () => pick(['a', 'ab', 'b']));
      const patterns = [...new Set(Array.from({ length: 2 + rand(10) }, () => randomPattern(base)))];
      const acl = ACL.compile([
        { name: 'r', text: '', rules: patterns.map((path) => ({ path, capabilities: ['read', 'list'], requiredParameters: [] })) },
      ]);
      for (let i = 0; i < 30; i++) {
        const path = randomPath(patterns) + (rand(4) === 0 ? '/' : '');
        const ctx = { patterns, path };
        if (patterns.filter((p) => referenceWinner([p], path, false) !== undefined).length > 1) contested++;
        expect({ ...ctx, got: acl.ruleFor(path)?.path }).toEqual({ ...ctx, got: referenceWinner(patterns, path, false) });
        expect({ ...ctx, got: acl.allowed(path, 'list').rule?.path }).toEqual({
          ...ctx,
          got: referenceWinner(patterns, path, true),
        });
      }
    }
    // Guard against the generator drifting into cases where nothing competes.
    expect(contested).toBeGreaterThan(3000);
  });
});
