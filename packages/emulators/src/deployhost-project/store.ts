/**
 * The projects and their environment variables, and the rules the host applies to them: key
 * syntax, value size, types, targets, and one value per key and target (and git branch).
 */
import { randomBytes } from 'node:crypto';
import { HttpError, isRecord } from '../json-http';

export const TARGETS = ['production', 'preview', 'development'] as const;
export const TYPES = ['plain', 'encrypted', 'sensitive', 'secret', 'system'] as const;
/** The host's limit for all variables of a deployment together; one variable may not exceed it. */
export const MAX_VALUE_BYTES = 64 * 1024;
const KEY = /^[A-Za-z_][A-Za-z0-9_]*$/;
const MAX_KEY_LENGTH = 256;

export interface EnvInput {
  key: string;
  value: string;
  type: (typeof TYPES)[number];
  target: string[];
  gitBranch?: string;
  comment?: string;
}

export interface EnvVar extends EnvInput {
  id: string;
  createdAt: number;
  updatedAt: number;
}

export interface Project {
  id: string;
  name: string;
  teamId?: string;
  envs: EnvVar[];
}

const invalid = (code: string, message: string): HttpError => new HttpError(400, { error: { code, message } });

/** Validates one variable of a request body; `where` names it in the message. */
export function checkEnvInput(raw: unknown, where: string): EnvInput {
  if (!isRecord(raw)) throw invalid('bad_request', `${where} must be an object`);
  const { key, value, type, target, gitBranch, comment } = raw;
  if (typeof key !== 'string' || key === '') throw invalid('missing_key', `${where}.key is required`);
  if (key.length > MAX_KEY_LENGTH || !KEY.test(key)) {
    throw invalid(
      'invalid_key',
      `${where}.key: the name of an Environment Variable may contain only letters, digits and underscores, may not start with a digit, and is at most ${MAX_KEY_LENGTH} characters`,
    );
  }
  if (typeof value !== 'string') throw invalid('missing_value', `${where}.value is required and must be a string`);
  if (Buffer.byteLength(value) > MAX_VALUE_BYTES) {
    throw invalid('env_value_too_large', `${where}.value of ${key} is larger than ${MAX_VALUE_BYTES} bytes`);
  }
  if (typeof type !== 'string' || !(TYPES as readonly string[]).includes(type)) {
    throw invalid('invalid_type', `${where}.type must be one of ${TYPES.join(', ')}`);
  }
  if (!Array.isArray(target) || target.length === 0 || !target.every((t) => (TARGETS as readonly unknown[]).includes(t))) {
    throw invalid('invalid_target', `${where}.target must be a non-empty array of ${TARGETS.join(', ')}`);
  }
  if (type === 'sensitive' && target.includes('development')) {
    throw invalid('invalid_target', `${where}.target: sensitive variables cannot target development`);
  }
  if (gitBranch !== undefined && gitBranch !== null && (typeof gitBranch !== 'string' || !target.every((t) => t === 'preview'))) {
    throw invalid('invalid_git_branch', `${where}.gitBranch must be a string, and only with the preview target`);
  }
  if (comment !== undefined && (typeof comment !== 'string' || comment.length > 500)) {
    throw invalid('invalid_comment', `${where}.comment must be a string of at most 500 characters`);
  }
  return {
    key,
    value,
    type: type as EnvInput['type'],
    target: [...new Set(target as string[])],
    ...(typeof gitBranch === 'string' ? { gitBranch } : {}),
    ...(comment === undefined ? {} : { comment: comment as string }),
  };
}

const randomId = (length: number): string =>
  [...randomBytes(length)].map((b) => 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789'[b % 62]).join('');

export class DeployhostStore {
  private readonly byId = new Map<string, Project>();
  private lastTime = 0;

  createProject(options: { name: string; id?: string; teamId?: string }): Project {
    const id = options.id ?? `prj_${randomId(28)}`;
    if (this.byId.has(id) || this.findProject(options.name, options.teamId)) {
      throw invalid('conflict', `A project named ${options.name} (or with id ${id}) already exists`);
    }
    const project: Project = { id, name: options.name, envs: [], ...(options.teamId ? { teamId: options.teamId } : {}) };
    this.byId.set(id, project);
    return copy(project);
  }

  /** By id or by name within the team (or among personal projects without one). */
  findProject(idOrName: string, teamId?: string): Project | undefined {
    const project = this.byId.get(idOrName) ?? [...this.byId.values()].find((p) => p.name === idOrName && p.teamId === teamId);
    return project?.teamId === teamId ? project : undefined;
  }

  projects(): Project[] {
    return [...this.byId.values()].map(copy);
  }

  /** Stores a new variable; a clash is refused unless `upsert`, which overwrites the clashing one. */
  put(project: Project, input: EnvInput, upsert: boolean): EnvVar {
    const clash = this.clash(project, input);
    if (clash && !upsert) throw conflictError(input, clash);
    if (clash) return this.update(clash, input);
    const now = this.now();
    const env: EnvVar = { ...input, id: randomId(16), createdAt: now, updatedAt: now };
    project.envs.push(env);
    return env;
  }

  conflictCheck(project: Project, input: EnvInput, self: string): void {
    const clash = this.clash(project, input, self);
    if (clash) throw conflictError(input, clash);
  }

  /** Replaces what the variable holds with `input`; the id and creation time stay. */
  update(env: EnvVar, input: EnvInput): EnvVar {
    delete env.gitBranch;
    delete env.comment;
    return Object.assign(env, input, { updatedAt: this.now() });
  }

  remove(project: Project, env: EnvVar): void {
    project.envs = project.envs.filter((e) => e !== env);
  }

  clear(): void {
    this.byId.clear();
  }

  private clash(project: Project, input: EnvInput, self?: string): EnvVar | undefined {
    return project.envs.find(
      (e) => e.id !== self && e.key === input.key && e.gitBranch === input.gitBranch && e.target.some((t) => input.target.includes(t)),
    );
  }

  /** Strictly increasing milliseconds, so every change has its own `updatedAt`. */
  private now(): number {
    this.lastTime = Math.max(Date.now(), this.lastTime + 1);
    return this.lastTime;
  }
}

function conflictError(input: EnvInput, clash: EnvVar): HttpError {
  const target = clash.target.find((t) => input.target.includes(t));
  return new HttpError(400, {
    error: {
      code: 'ENV_ALREADY_EXISTS',
      message: `A variable with the name \`${input.key}\` already exists for the target ${target}${input.gitBranch ? ` on branch ${input.gitBranch}` : ''}`,
      key: input.key,
      envVarId: clash.id,
      target: clash.target,
    },
  });
}

function copy(project: Project): Project {
  return { ...project, envs: project.envs.map((e) => ({ ...e, target: [...e.target] })) };
}
