import { expectFailure } from '@strongroom/core';
import { parseTemplate, renderTemplate } from './template';

const values = {
  DestinationType: 'cloud1-sm', DestinationName: 'prod', NamespacePath: 'team/', MountPath: 'secret/', MountAccessor: 'kv_1a2b',
  SecretPath: 'app/db', SecretBaseName: 'db', SecretKey: 'password',
};

async function rule(source: string): Promise<string> {
  return (await expectFailure(Promise.resolve().then(() => parseTemplate(source)), 400)).message;
}

describe('secret name templates', () => {
  it('fills placeholders through uppercase, lowercase and replace, in pipeline order', () => {
    const t = parseTemplate('vault/{{ .MountAccessor | uppercase }}/{{ .SecretPath | replace "/" "_" | lowercase }}-{{.SecretKey}}');
    expect(renderTemplate(t, values)).toBe('vault/KV_1A2B/app_db-password');
    expect(t.uses('SecretKey')).toBe(true);
    expect(t.uses('NamespacePath')).toBe(false);
  });

  it('takes quoted strings with escaped quotes and Go trim markers', () => {
    const t = parseTemplate('{{- .SecretBaseName | replace "\\"" "q" -}}');
    expect(renderTemplate(t, { SecretBaseName: 'a"b' })).toBe('aqb');
  });

  it('knows every placeholder of the API', () => {
    const all = Object.keys(values).map((k) => `{{ .${k} }}`).join('/');
    expect(renderTemplate(parseTemplate(all), values)).toBe(Object.values(values).join('/'));
  });

  it.each([
    ['', 'must not be empty'],
    ['plain-name', 'at least one placeholder'],
    ['{{ .SecretPath', '"{{" without a matching "}}"'],
    ['a }} {{ .SecretPath }}', '"}}" without a matching "{{"'],
    ['{{ .Secret }}', 'unknown placeholder'],
    ['{{ .NamespaceID }}', 'unknown placeholder'],
    ['{{ SecretPath }}', 'must start with a placeholder'],
    ['{{ .SecretPath .MountPath }}', 'must start with a placeholder'],
    ['{{ .SecretPath | title }}', 'unknown filter'],
    ['{{ .SecretPath | printf "%s" }}', 'unknown filter'],
    ['{{ .SecretPath | uppercase "x" }}', 'takes no arguments'],
    ['{{ .SecretPath | replace "/" }}', 'two quoted strings'],
    ['{{ .SecretPath | replace / _ }}', 'two quoted strings'],
    ['{{ .SecretPath | replace "" "_" }}', 'non-empty string'],
    ['{{ .SecretPath | replace "/ "_" }}', 'unterminated string'],
    ['{{ .SecretPath | replace "\\n" "_" }}', 'may be escaped'],
    ['x'.repeat(1025) + '{{ .SecretPath }}', 'at most 1024'],
  ])('refuses %j, naming the field and the rule', async (source, expected) => {
    const message = await rule(source);
    expect(message).toContain('"secret_name_template"');
    expect(message).toContain(expected);
  });
});
