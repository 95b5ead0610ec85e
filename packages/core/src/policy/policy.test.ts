import { BadRequestError } from '../errors';
import { DEFAULT_POLICY_TEXT } from './default-policy';
import { normalizePolicyName, parseDurationSeconds, parsePolicy, validatePolicyName } from './policy';

async function rejection(text: string): Promise<BadRequestError> {
  try {
    await parsePolicy('p', text);
  } catch (err) {
    expect(err).toBeInstanceOf(BadRequestError);
    return err as BadRequestError;
  }
  throw new Error(`expected ${JSON.stringify(text)} to be rejected`);
}

describe('parsePolicy: HCL', () => {
  it('reads path stanzas with capabilities, keeping the text and name', async () => {
    const text = `
path "secret/data/*" { capabilities = ["create", "read", "update"] }
path "secret/+/team" { capabilities = ["list"] }
path "sys/*" { capabilities = ["deny"] }
`;
    const p = await parsePolicy('team', text);
    expect(p.name).toBe('team');
    expect(p.text).toBe(text);
    // hcl2json goes through a Go map, so stanzas come back ordered by path, not as written.
    expect(p.rules.map((r) => [r.path, r.capabilities])).toEqual([
      ['secret/+/team', ['list']],
      ['secret/data/*', ['create', 'read', 'update']],
      ['sys/*', ['deny']],
    ]);
    expect(p.rules[0]?.requiredParameters).toEqual([]);
    expect(p.rules[0]?.allowedParameters).toBeUndefined();
  });

  it('accepts an empty document and comments-only document as granting nothing', async () => {
    expect((await parsePolicy('e', '')).rules).toEqual([]);
    expect((await parsePolicy('e', '  \n# nothing\n// here\n')).rules).toEqual([]);
  });

  it('keeps repeated stanzas for one path as separate rules', async () => {
    const p = await parsePolicy('p', 'path "a" {\n capabilities = ["read"]\n}\npath "a" {\n capabilities = ["list"]\n}\n');
    expect(p.rules.map((r) => [r.path, r.capabilities])).toEqual([
      ['a', ['read']],
      ['a', ['list']],
    ]);
  });

  it('sorts and de-duplicates capabilities, and reduces anything with deny to deny', async () => {
    const p = await parsePolicy(
      'p',
      'path "a" { capabilities = ["update", "read", "read"] }\npath "b" { capabilities = ["read", "deny", "sudo"] }\n',
    );
    expect(p.rules[0]?.capabilities).toEqual(['read', 'update']);
    expect(p.rules[1]?.capabilities).toEqual(['deny']);
  });

  it('strips one leading slash from paths', async () => {
    const p = await parsePolicy('p', 'path "/secret/foo" { capabilities = ["read"] }');
    expect(p.rules[0]?.path).toBe('secret/foo');
  });

  it('maps the legacy policy word to capabilities', async () => {
    const p = await parsePolicy(
      'p',
      [
        'path "r" { policy = "read" }',
        'path "w" { policy = "write" }',
        'path "d" { policy = "deny" }',
        'path "s" { policy = "sudo" }',
      ].join('\n'),
    );
    expect(Object.fromEntries(p.rules.map((r) => [r.path, r.capabilities]))).toEqual({
      r: ['list', 'read'],
      w: ['create', 'delete', 'list', 'read', 'update'],
      d: ['deny'],
      s: ['create', 'delete', 'list', 'read', 'sudo', 'update'],
    });
  });

  it('unions the legacy word with explicit capabilities', async () => {
    const p = await parsePolicy('p', 'path "a" {\n  policy = "read"\n  capabilities = ["patch"]\n}\n');
    expect(p.rules[0]?.capabilities).toEqual(['list', 'patch', 'read']);
  });

  it('reads parameter constraints and wrapping TTLs, lower-casing parameter names', async () => {
    const p = await parsePolicy(
      'p',
      `path "secret/foo" {
  capabilities = ["create"]
  allowed_parameters = {
    "Colour" = ["red", "blue"]
    "count"  = [1, true]
    "*"      = []
  }
  denied_parameters = {
    "secret" = []
  }
  required_parameters = ["Owner", "owner", "ttl"]
  min_wrapping_ttl = "1m"
  max_wrapping_ttl = 3600
}`,
    );
    const r = p.rules[0];
    expect(r?.allowedParameters).toEqual(
      new Map<string, string[]>([
        ['colour', ['red', 'blue']],
        ['count', ['1', 'true']],
        ['*', []],
      ]),
    );
    expect(r?.deniedParameters).toEqual(new Map([['secret', []]]));
    expect(r?.requiredParameters).toEqual(['owner', 'ttl']);
    expect(r?.minWrappingTtl).toBe(60);
    expect(r?.maxWrappingTtl).toBe(3600);
  });

  it('accepts the block form of a parameter map', async () => {
    const p = await parsePolicy('p', 'path "a" {\n  allowed_parameters {\n    foo = ["x"]\n  }\n}\n');
    expect(p.rules[0]?.allowedParameters).toEqual(new Map([['foo', ['x']]]));
    expect(p.rules[0]?.capabilities).toEqual([]);
  });

  it('accepts templated and interpolation-looking paths literally', async () => {
    const p = await parsePolicy('p', 'path "identity/entity/id/{{identity.entity.id}}" { capabilities = ["read"] }');
    expect(p.rules[0]?.path).toBe('identity/entity/id/{{identity.entity.id}}');
  });

  it('accepts a top-level name and a per-path comment', async () => {
    const p = await parsePolicy('p', 'name = "old"\npath "a" {\n  comment = "why"\n  capabilities = ["read"]\n}\n');
    expect(p.rules).toHaveLength(1);
  });
});

describe('parsePolicy: JSON', () => {
  it('reads the object-per-path shape users write', async () => {
    const p = await parsePolicy(
      'j',
      JSON.stringify({
        path: {
          'secret/*': { capabilities: ['read', 'list'] },
          'sys/mounts': { policy: 'read' },
        },
      }),
    );
    expect(p.rules.map((r) => [r.path, r.capabilities])).toEqual([
      ['secret/*', ['list', 'read']],
      ['sys/mounts', ['list', 'read']],
    ]);
  });

  it('reads the array-of-blocks shape hcl2json produces, and an array of path maps', async () => {
    const p = await parsePolicy(
      'j',
      '  ' +
        JSON.stringify({
          path: [
            { a: [{ capabilities: ['read'] }, { capabilities: ['update'] }] },
            { b: { capabilities: ['delete'], required_parameters: ['X'], min_wrapping_ttl: '1h30m' } },
          ],
        }),
    );
    expect(p.rules.map((r) => [r.path, r.capabilities])).toEqual([
      ['a', ['read']],
      ['a', ['update']],
      ['b', ['delete']],
    ]);
    expect(p.rules[2]?.requiredParameters).toEqual(['x']);
    expect(p.rules[2]?.minWrappingTtl).toBe(5400);
  });

  it('accepts an empty object and one without paths', async () => {
    expect((await parsePolicy('j', '{}')).rules).toEqual([]);
    expect((await parsePolicy('j', '{"path": {}}')).rules).toEqual([]);
  });
});

describe('parsePolicy: rejections', () => {
  it('names the bad capability', async () => {
    const err = await rejection('path "secret/*" { capabilities = ["raed"] }');
    expect(err.message).toBe('policy: path "secret/*": unknown capability "raed"');
    expect(err.status).toBe(400);
  });

  it('rejects capabilities outside the eight, including ones newer Vaults know', async () => {
    expect((await rejection('path "a" { capabilities = ["subscribe"] }')).message).toBe(
      'policy: path "a": unknown capability "subscribe"',
    );
    expect((await rejection('path "a" { capabilities = ["READ"] }')).message).toBe(
      'policy: path "a": unknown capability "READ"',
    );
  });

  it('rejects capabilities that are not a list of strings', async () => {
    expect((await rejection('path "a" { capabilities = "read" }')).message).toBe(
      'policy: path "a": capabilities must be a list of strings',
    );
    expect((await rejection('{"path": {"a": {"capabilities": [1]}}}')).message).toBe(
      'policy: path "a": capabilities must be a list of strings',
    );
  });

  it('rejects a * anywhere but at the end', async () => {
    expect((await rejection('path "secret/*/foo" { capabilities = ["read"] }')).message).toBe(
      'policy: path "secret/*/foo": "*" may only appear as the last character',
    );
    expect((await rejection('path "**" { capabilities = ["read"] }')).message).toBe(
      'policy: path "**": "*" may only appear as the last character',
    );
  });

  it('rejects +*', async () => {
    expect((await rejection('path "secret/+*" { capabilities = ["read"] }')).message).toMatch(
      /^policy: path "secret\/\+\*": "\+\*" is not allowed/,
    );
  });

  it('rejects unknown keys inside a path block and at the top level', async () => {
    expect((await rejection('path "a" {\n  capabilities = ["read"]\n  control_group = "x"\n}\n')).message).toBe(
      'policy: path "a": unknown key "control_group"',
    );
    expect((await rejection('paths "a" { capabilities = ["read"] }')).message).toBe(
      'policy: unknown top-level key "paths"',
    );
  });

  it('rejects an unknown legacy policy word', async () => {
    expect((await rejection('path "a" { policy = "admin" }')).message).toBe(
      'policy: path "a": unknown policy "admin" (expected "read", "write", "deny" or "sudo")',
    );
  });

  it('rejects HCL that does not parse, without echoing the document', async () => {
    const secretish = 'path "a" { capabilities = ["read"] \n hunter2-token-value';
    const err = await rejection(secretish);
    expect(err.message).toMatch(/^policy: failed to parse as HCL: line /);
    expect(err.message).not.toContain('hunter2');
    expect(err.message.length).toBeLessThan(240);
  });

  it('rejects JSON that does not parse, without echoing the document', async () => {
    const err = await rejection('{"path": {"a": hunter2}}');
    expect(err.message).toMatch(/^policy: failed to parse as JSON/);
    expect(err.message).not.toContain('hunter2');
  });

  it('rejects JSON whose shape is wrong', async () => {
    expect((await rejection('{"path": ["a"]}')).message).toBe(
      'policy: "path" must map path patterns to rule blocks',
    );
    expect((await rejection('{"path": {"a": "read"}}')).message).toBe(
      'policy: path "a": rule must be a block of settings',
    );
  });

  it('rejects malformed parameter constraints', async () => {
    expect((await rejection('{"path": {"a": {"allowed_parameters": {"x": "y"}}}}')).message).toBe(
      'policy: path "a": allowed_parameters: "x" must be a list of values (empty list: any value)',
    );
    expect((await rejection('{"path": {"a": {"denied_parameters": ["x"]}}}')).message).toBe(
      'policy: path "a": denied_parameters must map parameter names to lists of values',
    );
    expect((await rejection('{"path": {"a": {"allowed_parameters": {"x": [{}]}}}}')).message).toBe(
      'policy: path "a": allowed_parameters: "x" values must be strings, numbers or booleans',
    );
    expect((await rejection('{"path": {"a": {"required_parameters": "x"}}}')).message).toBe(
      'policy: path "a": required_parameters must be a list of strings',
    );
  });

  it('rejects bad wrapping TTLs', async () => {
    expect((await rejection('path "a" { min_wrapping_ttl = "soon" }')).message).toBe(
      'policy: path "a": min_wrapping_ttl: invalid duration "soon"',
    );
    expect((await rejection('path "a" {\n  min_wrapping_ttl = "2h"\n  max_wrapping_ttl = "1h"\n}\n')).message).toBe(
      'policy: path "a": max_wrapping_ttl must not be less than min_wrapping_ttl',
    );
    expect((await rejection('{"path": {"a": {"max_wrapping_ttl": -5}}}')).message).toBe(
      'policy: path "a": max_wrapping_ttl must be a non-negative duration',
    );
  });
});

describe('parseDurationSeconds', () => {
  it.each([
    [30, 30],
    ['45', 45],
    ['90s', 90],
    ['5m', 300],
    ['1h30m', 5400],
    ['1.5h', 5400],
    ['2d', 172800],
    ['500ms', 0.5],
  ])('%p is %p seconds', (input, seconds) => {
    expect(parseDurationSeconds(input, 'ttl')).toBe(seconds);
  });

  it('rejects junk', () => {
    expect(() => parseDurationSeconds('1x', 'ttl')).toThrow('ttl: invalid duration "1x"');
    expect(() => parseDurationSeconds('h', 'ttl')).toThrow('ttl: invalid duration "h"');
    expect(() => parseDurationSeconds(true, 'ttl')).toThrow(BadRequestError);
  });
});

describe('policy names', () => {
  it('normalizes by trimming and lower-casing', () => {
    expect(normalizePolicyName('  Team-Admins ')).toBe('team-admins');
  });

  it('accepts reasonable names', () => {
    for (const n of ['default', 'team-a', 'app.read_only', 'ops@corp', 'a+b=c,d', 'team/app']) {
      expect(() => validatePolicyName(n)).not.toThrow();
    }
  });

  it('refuses empty, over-long and oddly spelt names', () => {
    expect(() => validatePolicyName('')).toThrow('name: policy name must not be empty');
    expect(() => validatePolicyName('a'.repeat(129))).toThrow('name: policy name must be at most 128 characters');
    expect(() => validatePolicyName('a'.repeat(128))).not.toThrow();
    expect(() => validatePolicyName('Upper')).toThrow(/may contain only lower-case letters/);
    expect(() => validatePolicyName('with space')).toThrow(/may contain only/);
    expect(() => validatePolicyName('/lead')).toThrow(/must not start or end with "\/"/);
    expect(() => validatePolicyName('a//b')).toThrow(/contain "\/\/"/);
  });
});

describe('default policy text', () => {
  it('parses into the documented self-service grants', async () => {
    const p = await parsePolicy('default', DEFAULT_POLICY_TEXT);
    const byPath = Object.fromEntries(p.rules.map((r) => [r.path, r.capabilities]));
    expect(byPath['auth/token/lookup-self']).toEqual(['read']);
    expect(byPath['auth/token/renew-self']).toEqual(['update']);
    expect(byPath['auth/token/revoke-self']).toEqual(['update']);
    expect(byPath['sys/capabilities-self']).toEqual(['update']);
    expect(byPath['cubbyhole/*']).toEqual(['create', 'delete', 'list', 'read', 'update']);
    expect(byPath['sys/tools/hash/*']).toEqual(['update']);
    expect(p.rules).toHaveLength(16);
  });
});
