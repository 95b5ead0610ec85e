/**
 * Reading query-protocol parameters. awsQuery flattens lists as `Name.member.N` (and structures
 * in them as `Name.member.N.Field`); ec2Query as `Name.N`. Index order is the list order.
 */
import { validationError } from './errors';
import type { Tag } from './state';

export type Params = ReadonlyMap<string, string>;

export function optional(params: Params, name: string): string | undefined {
  return params.get(name);
}

export function required(params: Params, name: string): string {
  const value = params.get(name);
  if (value === undefined || value === '') {
    const field = name.charAt(0).toLowerCase() + name.slice(1);
    throw validationError(
      `1 validation error detected: Value null at '${field}' failed to satisfy constraint: Member must not be null`,
    );
  }
  return value;
}

export function optionalInt(params: Params, name: string): number | undefined {
  const value = params.get(name);
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n)) throw validationError(`Invalid value for parameter ${name}: ${value}`);
  return n;
}

export function optionalBool(params: Params, name: string): boolean | undefined {
  const value = params.get(name);
  if (value === undefined) return undefined;
  return value === 'true';
}

/** Collects the indexes N used under `prefix.N`, in numeric order. */
function indexes(params: Params, prefix: string): number[] {
  const seen = new Set<number>();
  const head = prefix + '.';
  for (const key of params.keys()) {
    if (!key.startsWith(head)) continue;
    const n = Number(key.slice(head.length).split('.')[0]);
    if (Number.isInteger(n) && n > 0) seen.add(n);
  }
  return [...seen].sort((a, b) => a - b);
}

/** awsQuery scalar list: `Name.member.1=a&Name.member.2=b`. */
export function memberList(params: Params, name: string): string[] {
  const prefix = `${name}.member`;
  return indexes(params, prefix).flatMap((n) => {
    const v = params.get(`${prefix}.${n}`);
    return v === undefined ? [] : [v];
  });
}

/** awsQuery structure list: returns a field reader per entry. */
export function memberStructs(params: Params, name: string): Array<(field: string) => string | undefined> {
  const prefix = `${name}.member`;
  return indexes(params, prefix).map((n) => (field: string) => params.get(`${prefix}.${n}.${field}`));
}

/** ec2Query scalar list: `Name.1=a&Name.2=b`. */
export function ec2List(params: Params, name: string): string[] {
  return indexes(params, name).flatMap((n) => {
    const v = params.get(`${name}.${n}`);
    return v === undefined ? [] : [v];
  });
}

/** ec2Query filters: `Filter.N.Name` with values `Filter.N.Value.M`. */
export function ec2Filters(params: Params): Array<{ name: string; values: string[] }> {
  return indexes(params, 'Filter').map((n) => ({
    name: params.get(`Filter.${n}.Name`) ?? '',
    values: ec2List(params, `Filter.${n}.Value`),
  }));
}

export function tagsParam(params: Params, name = 'Tags'): Tag[] {
  const tags = memberStructs(params, name).map((field) => ({ key: field('Key') ?? '', value: field('Value') ?? '' }));
  if (tags.length > 50) throw validationError('Tag count exceeds the maximum of 50.');
  for (const tag of tags) {
    if (tag.key === '') throw validationError('1 validation error detected: tag key must not be empty');
  }
  return tags;
}
