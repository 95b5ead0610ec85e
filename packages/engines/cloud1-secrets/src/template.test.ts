import { FakeClock } from '@strongroom/core';
import { formatGoLayout, parseTemplate, TemplateError } from './template';

const FIELDS = ['Type', 'DisplayName', 'PolicyName'];
const clock = new FakeClock(Date.UTC(2026, 2, 4, 5, 6, 7, 89));
const render = (text: string, values: Record<string, string> = {}) => parseTemplate(text, FIELDS).render(values, clock);

describe('the template language', () => {
  it('renders fields, literals, pipelines and parenthesized calls', () => {
    expect(render('a-{{ .DisplayName }}-{{ .PolicyName }}', { DisplayName: 'token', PolicyName: 'web' })).toBe('a-token-web');
    expect(render('{{ "abcdef" | truncate 3 }}')).toBe('abc');
    expect(render('{{ printf "%s-%s" .DisplayName (.PolicyName | uppercase) }}', { DisplayName: 'x', PolicyName: 'y' })).toBe('x-Y');
    expect(render('{{ replace "-" "_" "a-b-c" }}|{{ lowercase "AbC" }}|{{ `raw "q"` }}')).toBe('a_b_c|abc|raw "q"');
    expect(render('{{ printf "%d%%" 42 }}')).toBe('42%');
  });

  it('has time, random, hash and id helpers', () => {
    expect(render('{{ unix_time }}')).toBe(String(Math.floor(clock.now() / 1000)));
    expect(render('{{ unix_time_millis }}')).toBe(String(clock.now()));
    expect(render('{{ timestamp "2006-01-02T15:04:05.000Z07:00" }}')).toBe('2026-03-04T05:06:07.089Z');
    expect(render('{{ random 20 }}')).toMatch(/^[A-Za-z0-9]{20}$/);
    expect(render('{{ random 20 }}')).not.toBe(render('{{ random 20 }}'));
    expect(render('{{ sha256 "abc" }}')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(render('{{ base64 "hi" }}')).toBe('aGk=');
    expect(render('{{ uuid }}')).toMatch(/^[0-9a-f-]{36}$/);
    const long = 'x'.repeat(30);
    expect(render(`{{ truncate_sha256 20 "${long}" }}`)).toMatch(/^x{12}[0-9a-f]{8}$/);
    expect(render('{{ truncate_sha256 20 "short" }}')).toBe('short');
  });

  it('branches with if / else if / else and trims whitespace with {{- -}}', () => {
    const text = '{{ if (eq .Type "STS") }}sts{{ else if eq .Type "IAM" }}iam{{ else }}other{{ end }}';
    expect(render(text, { Type: 'STS' })).toBe('sts');
    expect(render(text, { Type: 'IAM' })).toBe('iam');
    expect(render(text, { Type: 'X' })).toBe('other');
    expect(render('a  {{- "b" -}}  c {{/* note */}}d')).toBe('abc d');
    expect(render('{{ if not (eq .Type "") }}set{{ end }}', { Type: 'x' })).toBe('set');
  });

  it('refuses bad templates when parsed, saying why', () => {
    const bad: [string, RegExp][] = [
      ['{{ .Nope }}', /unknown field \.Nope/],
      ['{{ shout "x" }}', /unknown function "shout"/],
      ['{{ if .Type }}x', /no \{\{end\}\}/],
      ['{{ end }}', /unexpected \{\{end\}\}/],
      ['{{ "a" "b" }}', /only a function takes arguments/],
      ['{{ .Type | "x" }}', /cannot pipe into a value/],
      ['{{ (truncate 3 "abcd" }}', /unclosed "\("/],
      ['{{ "abc', /unterminated string/],
      ['{{ .Type ', /unclosed action/],
    ];
    for (const [text, message] of bad) expect(() => parseTemplate(text, FIELDS)).toThrow(message);
    expect(() => render('{{ truncate "x" "abc" }}')).toThrow(TemplateError);
  });

  it('formats Go layouts it knows and copies the rest', () => {
    expect(formatGoLayout(Date.UTC(2026, 0, 2, 15, 4, 5), 'Mon Jan 2006-01-02 15:04:05 MST')).toBe('Fri Jan 2026-01-02 15:04:05 UTC');
  });
});
