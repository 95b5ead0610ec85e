import { DEFAULT_POLICY_TEXT } from './default-policy';
import { hclNestingDepth } from './hcl-nesting';

describe('hclNestingDepth', () => {
  it('finds the shallow nesting of real policies', () => {
    expect(hclNestingDepth('')).toBe(0);
    expect(hclNestingDepth('path "a" { capabilities = ["read"] }')).toBe(2);
    expect(hclNestingDepth(DEFAULT_POLICY_TEXT)).toBeLessThanOrEqual(3);
    const params = 'path "a" {\n  allowed_parameters {\n    "k" = ["x", "y"]\n  }\n}\n';
    expect(hclNestingDepth(params)).toBe(3);
    expect(hclNestingDepth('path "identity/entity/id/{{identity.entity.id}}" { capabilities = ["read"] }')).toBe(2);
  });

  it('counts brackets in expressions and template sequences, and nothing in text or comments', () => {
    expect(hclNestingDepth(`x = ${'{a='.repeat(40)}1${'}'.repeat(40)}`)).toBe(40);
    expect(hclNestingDepth(`x = ${'['.repeat(40)}${']'.repeat(40)}`)).toBe(40);
    expect(hclNestingDepth(`${'a {\n'.repeat(40)}${'}\n'.repeat(40)}`)).toBe(40);
    expect(hclNestingDepth(`x = "\${${'('.repeat(10)}1${')'.repeat(10)}}"`)).toBe(11);
    expect(hclNestingDepth(`x = "${'{['.repeat(50)} \\" $\${ %%{"`)).toBe(0);
    expect(hclNestingDepth(`# ${'{'.repeat(50)}\n// ${'['.repeat(50)}\n/* ${'('.repeat(50)} */ x = 1`)).toBe(0);
    expect(hclNestingDepth(`x = <<EOT\n${'{'.repeat(50)}\n  EOT\ny = [1]\n`)).toBe(1);
    expect(hclNestingDepth(`x = <<-EOT\n  \${[[1]]}\n  EOT\n`)).toBe(3);
  });

  it('stays within bounds on malformed input', () => {
    expect(hclNestingDepth('}}}]]])))')).toBe(0);
    expect(hclNestingDepth('x = "unterminated\ny = [1]')).toBe(1);
    expect(hclNestingDepth('x = <<EOT\nnever ends {{{')).toBe(0);
  });
});
