import { BadRequestError } from './errors';
import { ACL } from './policy/acl';
import { DEFAULT_POLICY_NAME, DEFAULT_POLICY_TEXT } from './policy/default-policy';
import { checkPolicySize, normalizePolicyName, parsePolicy, validatePolicyName, type Policy } from './policy/policy';
import { collectKeys, type LogicalStorage } from './storage/logical';

/** Where the root namespace keeps its policies; other namespaces pass their own prefix. */
export const ROOT_POLICY_PREFIX = 'sys/policy/';
const ROOT = 'root';
const ACL_CACHE_LIMIT = 1024;

/**
 * ACL policies by name, parsed once and cached, and compiled ACLs per set of policy names
 * (most tokens share a few sets, so compiling per request would be wasted work).
 */
export class PolicyStore {
  private readonly parsed = new Map<string, Policy | null>();
  private readonly acls = new Map<string, ACL>();
  /**
   * Bumped by every change. A read or compile that began before a change may finish after it
   * with the old text; it is still answered, but only cached if nothing changed meanwhile, so a
   * revoked grant cannot linger in the caches.
   */
  private generation = 0;

  constructor(private readonly storage: LogicalStorage, private readonly prefix = ROOT_POLICY_PREFIX) {}

  /** Writes the built-in `default` policy on a new cluster. */
  async setup(): Promise<void> {
    if (!(await this.storage.get(this.prefix + DEFAULT_POLICY_NAME))) await this.write(DEFAULT_POLICY_NAME, DEFAULT_POLICY_TEXT);
  }

  clear(): void {
    this.generation++;
    this.parsed.clear();
    this.acls.clear();
  }

  async get(name: string): Promise<Policy | null> {
    const key = normalizePolicyName(name);
    if (this.parsed.has(key)) return this.parsed.get(key) ?? null;
    const generation = this.generation;
    const raw = await this.storage.get(this.prefix + key);
    const policy = raw ? await parsePolicy(key, raw.toString('utf8')) : null;
    if (generation === this.generation) this.parsed.set(key, policy);
    return policy;
  }

  async list(): Promise<string[]> {
    // Names may contain '/', so a policy can sit in a folder of the store.
    const names = (await collectKeys(this.storage, this.prefix)).map((k) => k.slice(this.prefix.length));
    return [...new Set([...names, ROOT])].sort();
  }

  async write(rawName: string, text: string): Promise<void> {
    const name = normalizePolicyName(rawName);
    validatePolicyName(name);
    if (name === ROOT) throw new BadRequestError('cannot update the "root" policy');
    checkPolicySize(text);
    const policy = await parsePolicy(name, text);
    await this.storage.put(this.prefix + name, Buffer.from(text));
    this.generation++;
    this.parsed.set(name, policy);
    this.acls.clear();
  }

  async delete(rawName: string): Promise<void> {
    const name = normalizePolicyName(rawName);
    if (name === ROOT || name === DEFAULT_POLICY_NAME) throw new BadRequestError(`cannot delete the "${name}" policy`);
    await this.storage.delete(this.prefix + name);
    this.generation++;
    this.parsed.delete(name);
    this.acls.clear();
  }

  /** The ACL of a set of policy names if it is compiled already; `acl` compiles it. */
  cachedAcl(names: readonly string[]): ACL | undefined {
    return this.acls.get(names.join('\n'));
  }

  /** The ACL of a set of policy names; names with no policy grant nothing. */
  async acl(names: readonly string[]): Promise<ACL> {
    const key = names.join('\n');
    const cached = this.acls.get(key);
    if (cached) return cached;
    const generation = this.generation;
    const policies: Policy[] = [];
    for (const n of names) {
      if (n === ROOT) policies.push({ name: ROOT, text: '', rules: [] });
      else {
        const p = await this.get(n);
        if (p) policies.push(p);
      }
    }
    const acl = ACL.compile(policies);
    if (generation !== this.generation) return acl;
    if (this.acls.size >= ACL_CACHE_LIMIT) this.acls.clear();
    this.acls.set(key, acl);
    return acl;
  }
}
