export type { Capability, PathRule, Policy } from './policy';
export {
  CAPABILITIES,
  normalizePolicyName,
  parseDurationSeconds,
  parsePolicy,
  validatePolicyName,
} from './policy';
export type { AllowResult, CompiledRule, Operation, RuleKind } from './acl';
export { ACL, checkParameters, ROOT_POLICY_NAME } from './acl';
export { DEFAULT_POLICY_NAME, DEFAULT_POLICY_TEXT } from './default-policy';
